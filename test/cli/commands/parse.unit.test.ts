import { expect } from 'chai';
import { parseCommandLine, outputFormat } from '../../../cli/src/commands/parse.ts';
import { COMMANDS, findCommand, suggestCommand } from '../../../cli/src/commands/registry.ts';
import { UsageError } from '../../../cli/src/errors.ts';

const logs = findCommand('function:logs')!;

function usage(run: () => unknown): UsageError {
  try {
    run();
  } catch (err) {
    expect(err).to.be.instanceOf(UsageError);
    return err as UsageError;
  }
  throw new Error('expected a UsageError');
}

describe('cli commands: command line parsing', () => {
  it('parses the spec combination of function:logs flags', () => {
    const parsed = parseCommandLine(logs, ['hello', '--status', 'error', '--limit', '5', '--page', '2', '--output', 'json']);
    expect(parsed.args).to.deep.equal(['hello']);
    expect(parsed.options).to.include({ status: 'error', limit: '5', page: '2' });
    expect(parsed.output).to.equal('json');
  });

  it('names an unknown flag and the command', () => {
    expect(usage(() => parseCommandLine(logs, ['hello', '--colour'])).message).to.equal('unknown flag "--colour" for function:logs');
  });

  it('says which flag lacks a value', () => {
    expect(usage(() => parseCommandLine(logs, ['hello', '--limit'])).message).to.equal('flag --limit needs a value');
  });

  it('takes a negative number after a flag as its value, so the range check names it', () => {
    expect(parseCommandLine(logs, ['hello', '--limit', '-5']).options).to.include({ limit: '-5' });
    const retention = findCommand('function:retention:set')!;
    expect(parseCommandLine(retention, ['hello', '--type', 'time', '--days', '-1']).options).to.include({ days: '-1' });
    expect(parseCommandLine(findCommand('function:test')!, ['hello', '-d', '-2']).options).to.include({ data: '-2' });
    expect(usage(() => parseCommandLine(logs, ['hello', '--limit', '-x'])).message).to.equal('flag --limit needs a value');
  });

  it('a flag without its value names what it takes', () => {
    const status = usage(() => parseCommandLine(logs, ['hello', '--status']));
    expect(status.message).to.equal('flag --status needs a value: success, error or all');
    expect(status.hint).to.match(/^--status: /);
    expect(usage(() => parseCommandLine(logs, ['hello', '--limit'])).hint).to.equal('--limit <int>: records per page, 1-1000 (default 50)');
  });

  it('names a missing or extra argument', () => {
    expect(usage(() => parseCommandLine(logs, [])).message).to.equal('function:logs needs a <function> argument');
    expect(usage(() => parseCommandLine(logs, ['a', 'b'])).message).to.equal('unexpected argument "b" for function:logs');
  });

  it('refuses a repeated single-value flag and an invalid --output', () => {
    expect(usage(() => parseCommandLine(logs, ['a', '--limit', '1', '--limit', '2'])).message).to.equal('--limit was given more than once');
    expect(usage(() => outputFormat('yaml')).message).to.equal('--output must be json or text, got "yaml"');
  });

  it('only commands that print a record take --output', () => {
    const del = findCommand('function:delete')!;
    expect(usage(() => parseCommandLine(del, ['a', '--output', 'json'])).message).to.contain('unknown flag "--output"');
  });

  it('--help wins over missing arguments', () => {
    expect(parseCommandLine(logs, ['--help']).help).to.equal(true);
  });

  it('suggests the closest command', () => {
    expect(suggestCommand('function:lgs')).to.equal('function:logs');
    expect(suggestCommand('logs')).to.equal('function:logs');
    expect(suggestCommand('zzzzzzzzzzzz')).to.equal(undefined);
  });

  it('registers every command of the spec and the lifecycle', () => {
    const names = COMMANDS.map((c) => c.name);
    for (const name of ['function:logs', 'function:retention:set', 'function:schedule:set', 'function:schedule:disable', 'function:get', 'function:test',
      'function:create', 'function:deploy', 'function:list', 'function:delete', 'function:activate', 'function:deactivate', 'login']) {
      expect(names).to.include(name);
    }
  });
});
