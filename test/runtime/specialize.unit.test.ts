import { expect } from 'chai';
import { ConfigError } from '../../runtime-image/src/config.ts';
import { SpecializeError, isLoopbackAddress, loadGenericConfig, parseSpecialization, sameSecret } from '../../runtime-image/src/specialize.ts';

describe('runtime warm pool: pure parts', () => {
  const token = 't'.repeat(32);

  it('a generic runtime needs FNHOST_SPECIALIZE_TOKEN (32+ characters), no function file and a loopback HOST', () => {
    expect(loadGenericConfig({ FNHOST_FUNCTION_FILE: '/f' })).to.equal(undefined);
    expect(loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, PORT: '0' })).to.deep.equal({ port: 0, host: '127.0.0.1', socket: undefined, token, warmWorkerMemoryMiB: undefined, isolation: 'thread' });
    // A spare worker's heap limit: a function's memory bounds.
    expect(loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, FNHOST_WARM_WORKER_MEMORY_MIB: '128' })?.warmWorkerMemoryMiB).to.equal(128);
    expect(() => loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, FNHOST_WARM_WORKER_MEMORY_MIB: '8' })).to.throw(ConfigError, /FNHOST_WARM_WORKER_MEMORY_MIB/);
    expect(loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, HOST: '::1' })?.host).to.equal('::1');
    expect(() => loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, HOST: '10.0.0.1' })).to.throw(ConfigError, 'HOST="10.0.0.1"');
    expect(loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, FNHOST_RUNTIME_SOCKET: '/run/fnhost/runtime.sock' })?.socket).to.equal('/run/fnhost/runtime.sock');
    expect(() => loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, FNHOST_RUNTIME_SOCKET: 'rel.sock' })).to.throw(ConfigError, 'FNHOST_RUNTIME_SOCKET="rel.sock" must be an absolute path');
    expect(() => loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, FNHOST_FUNCTION_FILE: '/f' })).to.throw(ConfigError, /not both/);
    expect(() => loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, FNHOST_HEALTH_PORT: '0' })).to.throw(ConfigError, /FNHOST_HEALTH_PORT/);
    expect(() => loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: 'short' })).to.throw(ConfigError, /at least 32/);
  });

  it('loopback peers only', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) expect(isLoopbackAddress(a), a).to.equal(true);
    for (const a of [undefined, '10.0.0.1', '::ffff:10.0.0.1', '0.0.0.0', 'fe80::1']) expect(isLoopbackAddress(a), String(a)).to.equal(false);
  });

  it('the specialization is parsed by the same loadConfig as a start; the runtime keeps its own PORT and HOST', () => {
    const spec = parseSpecialization({ env: { FNHOST_FUNCTION_FILE: '/f.mjs', FNHOST_MEMORY_MIB: '48', A: 'b' }, cwd: '/w' }, { PORT: '0', HOST: '127.0.0.1', OTHER: 'x' });
    expect(spec.env).to.deep.equal({ FNHOST_FUNCTION_FILE: '/f.mjs', FNHOST_MEMORY_MIB: '48', A: 'b', PORT: '0', HOST: '127.0.0.1' });
    expect(spec.config).to.include({ functionFile: '/f.mjs', memoryMiB: 48 });
    expect(spec.config.functionEnv).to.deep.equal({ A: 'b' });
    expect(spec.cwd).to.equal('/w');
    expect(() => parseSpecialization({ env: { FNHOST_FUNCTION_FILE: '/f', A: 1 } }, {})).to.throw(SpecializeError, 'env A must be a string');
    expect(() => parseSpecialization({ env: { FNHOST_FUNCTION_FILE: '/f', FNHOST_SPECIALIZE_TOKEN: 'x' } }, {})).to.throw(SpecializeError, /FNHOST_SPECIALIZE_TOKEN/);
    expect(() => parseSpecialization([], {})).to.throw(SpecializeError);
    expect(() => parseSpecialization({ env: { FNHOST_FUNCTION_FILE: '/f', FNHOST_MEMORY_MIB: '1' } }, {})).to.throw(ConfigError, /FNHOST_MEMORY_MIB="1"/);
  });

  it('sameSecret compares any lengths', () => {
    expect(sameSecret(token, token)).to.equal(true);
    expect(sameSecret(token + 'x', token)).to.equal(false);
    expect(sameSecret('', token)).to.equal(false);
    expect(sameSecret(token, '')).to.equal(false);
    expect(sameSecret('', '')).to.equal(true);
    // One unit changed anywhere, at the start, the middle or the end, fails; so does a prefix.
    for (const at of [0, Math.floor(token.length / 2), token.length - 1]) {
      const changed = token.slice(0, at) + (token[at] === 'a' ? 'b' : 'a') + token.slice(at + 1);
      expect(sameSecret(changed, token), `changed at ${at}`).to.equal(false);
    }
    expect(sameSecret(token.slice(0, -1), token)).to.equal(false);
    // A unit whose code differs only in high bits (é vs i: 0xe9 vs 0x69) is not mistaken for equal.
    expect(sameSecret('\u00e9', 'i')).to.equal(false);
    expect(sameSecret('\u0100', '\u0000')).to.equal(false);
  });
});
