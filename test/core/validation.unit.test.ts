import { expect } from 'chai';
import { ValidationError } from '../../core/src/errors.ts';
import * as limits from '../../core/src/limits.ts';
import {
  parseLogQuery, parsePositiveInt, validateCode, validateEnv, validateFunctionName, validateMemoryMiB, validateRetention,
  validateRoutes, validateStatusFilter, validateTimeoutSeconds,
} from '../../core/src/validation.ts';

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ValidationError);
    expect((err as ValidationError).status).to.equal(400);
    return (err as Error).message;
  }
  throw new Error('expected a ValidationError');
}

describe('validateFunctionName (DNS-1123 label)', () => {
  it('accepts lowercase letters, digits and inner dashes up to the limit', () => {
    for (const name of ['a', 'hello', 'hello-world', 'a1', '1a', '0', 'x'.repeat(limits.MAX_FUNCTION_NAME_LENGTH), 'a--b']) {
      expect(validateFunctionName(name)).to.equal(name);
    }
  });

  it('rejects uppercase, underscores, dots, edge dashes, spaces and overlong names, naming the value', () => {
    for (const name of ['Hello', 'hello_world', 'hello.world', '-hello', 'hello-', 'hel lo', 'héllo', 'x'.repeat(limits.MAX_FUNCTION_NAME_LENGTH + 1)]) {
      const message = errorOf(() => validateFunctionName(name));
      expect(message, name).to.include(`"${name}"`);
      expect(message).to.include('DNS-1123');
    }
  });

  it('requires a non-empty string', () => {
    expect(errorOf(() => validateFunctionName(''))).to.include('required');
    expect(errorOf(() => validateFunctionName(undefined))).to.include('required');
    expect(errorOf(() => validateFunctionName(42))).to.include('required');
  });
});

describe('parsePositiveInt and parseLogQuery', () => {
  it('accepts integers as numbers or decimal strings within 1..max', () => {
    expect(parsePositiveInt(5, 'limit', 10)).to.equal(5);
    expect(parsePositiveInt('10', 'limit', 10)).to.equal(10);
    expect(parsePositiveInt(' 7 ', 'limit', 10)).to.equal(7);
  });

  it('rejects zero, negatives, fractions, words, hex, exponents and values over max, naming the option and the value', () => {
    for (const bad of [0, -1, 1.5, '1.5', 'ten', '0x10', '1e2', '', 11, '11', null, true, Number.NaN]) {
      const message = errorOf(() => parsePositiveInt(bad, 'limit', 10));
      expect(message, String(bad)).to.include('limit must be an integer from 1 to 10');
      expect(message).to.include(JSON.stringify(bad));
    }
  });

  it('applies the defaults: status all, limit 50, page 1', () => {
    expect(parseLogQuery({})).to.deep.equal({ status: 'all', limit: 50, page: 1 });
    expect(limits.DEFAULT_LOG_PAGE_LIMIT).to.equal(50);
  });

  it('combines options given as strings', () => {
    expect(parseLogQuery({ status: 'error', limit: '5', page: '2' })).to.deep.equal({ status: 'error', limit: 5, page: 2 });
  });

  it(`caps limit at ${limits.MAX_LOG_PAGE_LIMIT} and rejects page 0`, () => {
    expect(parseLogQuery({ limit: String(limits.MAX_LOG_PAGE_LIMIT) }).limit).to.equal(limits.MAX_LOG_PAGE_LIMIT);
    expect(errorOf(() => parseLogQuery({ limit: limits.MAX_LOG_PAGE_LIMIT + 1 }))).to.include(`limit must be an integer from 1 to ${limits.MAX_LOG_PAGE_LIMIT}`);
    expect(errorOf(() => parseLogQuery({ page: '0' }))).to.include('page must be an integer');
  });

  it('accepts only the three status filters', () => {
    expect(validateStatusFilter('success')).to.equal('success');
    expect(validateStatusFilter(undefined)).to.equal('all');
    expect(errorOf(() => validateStatusFilter('failed'))).to.include('"failed"');
    expect(errorOf(() => parseLogQuery({ status: 'ERROR' }))).to.include('success, error, all');
  });
});

describe('validateRetention', () => {
  it('accepts the three types with their own field', () => {
    expect(validateRetention({ type: 'none' })).to.deep.equal({ type: 'none' });
    expect(validateRetention({ type: 'time', days: 7 })).to.deep.equal({ type: 'time', days: 7 });
    expect(validateRetention({ type: 'time', days: '30' })).to.deep.equal({ type: 'time', days: 30 });
    expect(validateRetention({ type: 'count', count: 1000 })).to.deep.equal({ type: 'count', count: 1000 });
  });

  it('rejects a field that belongs to another type', () => {
    expect(errorOf(() => validateRetention({ type: 'count', days: 3, count: 5 }))).to.include('type count takes count, not days');
    expect(errorOf(() => validateRetention({ type: 'time', days: 3, count: 5 }))).to.include('type time takes days, not count');
    expect(errorOf(() => validateRetention({ type: 'none', days: 3 }))).to.include('none takes neither');
    expect(errorOf(() => validateRetention({ type: 'none', count: 3 }))).to.include('none takes neither');
  });

  it('requires the field of its type', () => {
    expect(errorOf(() => validateRetention({ type: 'count' }))).to.include('type count needs count');
    expect(errorOf(() => validateRetention({ type: 'time' }))).to.include('type time needs days');
  });

  it('checks the ranges', () => {
    expect(validateRetention({ type: 'time', days: limits.MAX_RETENTION_DAYS })).to.deep.equal({ type: 'time', days: limits.MAX_RETENTION_DAYS });
    expect(errorOf(() => validateRetention({ type: 'time', days: limits.MAX_RETENTION_DAYS + 1 }))).to.include(`days must be an integer from 1 to ${limits.MAX_RETENTION_DAYS}`);
    expect(errorOf(() => validateRetention({ type: 'time', days: 0 }))).to.include('days must be');
    expect(errorOf(() => validateRetention({ type: 'count', count: -5 }))).to.include('count must be');
    expect(errorOf(() => validateRetention({ type: 'count', count: limits.MAX_RETENTION_COUNT + 1 }))).to.include(String(limits.MAX_RETENTION_COUNT));
  });

  it('rejects unknown types and non-objects, naming the value', () => {
    expect(errorOf(() => validateRetention({ type: 'forever' }))).to.include('"forever"');
    expect(errorOf(() => validateRetention(null))).to.include('must be an object');
    expect(errorOf(() => validateRetention('none'))).to.include('must be an object');
  });
});

describe('function settings', () => {
  it('timeout: 1..platform max, which a setting may lower', () => {
    expect(validateTimeoutSeconds(30)).to.equal(30);
    expect(validateTimeoutSeconds('900')).to.equal(900);
    expect(errorOf(() => validateTimeoutSeconds(901))).to.include('901');
    expect(errorOf(() => validateTimeoutSeconds(61, 60))).to.include('from 1 to 60');
  });

  it('memory: MIN..MAX MiB', () => {
    expect(validateMemoryMiB(128)).to.equal(128);
    expect(errorOf(() => validateMemoryMiB(16))).to.include(`at least ${limits.MIN_MEMORY_MIB}, got 16`);
    expect(errorOf(() => validateMemoryMiB(limits.MAX_MEMORY_MIB + 1))).to.include(String(limits.MAX_MEMORY_MIB + 1));
  });

  it('env: names, reserved prefix, string values, count and size limits', () => {
    expect(validateEnv(undefined)).to.deep.equal({});
    expect(validateEnv({ LOG_LEVEL: 'debug', _x1: '' })).to.deep.equal({ LOG_LEVEL: 'debug', _x1: '' });
    expect(errorOf(() => validateEnv({ '1BAD': 'x' }))).to.include('"1BAD"');
    expect(errorOf(() => validateEnv({ 'A-B': 'x' }))).to.include('"A-B"');
    expect(errorOf(() => validateEnv({ FNHOST_TOKEN: 'x' }))).to.include('reserved');
    expect(errorOf(() => validateEnv({ N: 5 }))).to.include('env N must be a string');
    expect(errorOf(() => validateEnv(['x']))).to.include('object');
    expect(errorOf(() => validateEnv({ BIG: 'x'.repeat(limits.MAX_ENV_VALUE_BYTES + 1) }))).to.include('env BIG is larger');
    const many = Object.fromEntries(Array.from({ length: limits.MAX_ENV_VARS + 1 }, (_, i) => [`V${i}`, '']));
    expect(errorOf(() => validateEnv(many))).to.include(`${limits.MAX_ENV_VARS + 1} variables`);
  });

  it('routes: path patterns starting with /, bounded', () => {
    expect(validateRoutes(['/users/:userId', '/items/:id/*'])).to.deep.equal(['/users/:userId', '/items/:id/*']);
    expect(validateRoutes(undefined)).to.deep.equal([]);
    expect(errorOf(() => validateRoutes(['users']))).to.include('"users"');
    expect(errorOf(() => validateRoutes(['/a b']))).to.include('"/a b"');
    expect(errorOf(() => validateRoutes('/x'))).to.include('array');
    expect(errorOf(() => validateRoutes(Array.from({ length: limits.MAX_ROUTES + 1 }, (_, i) => `/r${i}`)))).to.include(`at most ${limits.MAX_ROUTES}`);
  });

  it('code: required and bounded in bytes', () => {
    expect(validateCode('export default () => {}')).to.equal('export default () => {}');
    expect(errorOf(() => validateCode('   '))).to.include('code is required');
    expect(errorOf(() => validateCode(undefined))).to.include('code is required');
    const big = 'é'.repeat(limits.MAX_CODE_BYTES / 2 + 1);
    expect(errorOf(() => validateCode(big))).to.include(`${limits.MAX_CODE_BYTES + 2} bytes`);
  });
});
