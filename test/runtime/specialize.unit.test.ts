import { expect } from 'chai';
import { ConfigError } from '../../runtime-image/src/config.ts';
import { codeFileOf } from '../../runtime-image/src/specialize-remote.ts';
import { SpecializeError, isLoopbackAddress, loadGenericConfig, parseSpecialization, sameSecret } from '../../runtime-image/src/specialize.ts';

describe('runtime warm pool: pure parts', () => {
  const token = 't'.repeat(32);

  it('a generic runtime needs FNHOST_SPECIALIZE_TOKEN (32+ characters), no function file and a loopback HOST', () => {
    expect(loadGenericConfig({ FNHOST_FUNCTION_FILE: '/f' })).to.equal(undefined);
    expect(loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, PORT: '0' })).to.deep.equal({ port: 0, host: '127.0.0.1', socket: undefined, token, warmWorkerMemoryMiB: undefined, isolation: 'thread', remote: false });
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

  it('remote (a cluster pool pod): any HOST; the code inline or by digest, exactly one; the runtime names the file and keeps its own gateway and proxy', () => {
    expect(loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, HOST: '0.0.0.0', FNHOST_SPECIALIZE_REMOTE: '1' })).to.include({ host: '0.0.0.0', remote: true });
    // The image's default function file, emptied by the operator, is no function file.
    expect(loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, FNHOST_SPECIALIZE_REMOTE: '1', FNHOST_FUNCTION_FILE: '' })?.remote).to.equal(true);
    expect(() => loadGenericConfig({ FNHOST_SPECIALIZE_TOKEN: token, FNHOST_FUNCTION_FILE: '' })).to.throw(ConfigError, /not both/);
    const own = { PORT: '8080', HOST: '0.0.0.0', FNHOST_GATEWAY_URL: 'http://gw:8081', FNHOST_EGRESS_PROXY: 'http://gw:3128', HOME: '/tmp', NODE_ENV: 'production' };
    const inline = parseSpecialization({ env: { FNHOST_FUNCTION_ID: 'f', FNHOST_RUNTIME_TOKEN: token }, code: 'export default 1' }, own, true);
    expect(inline.code).to.equal('export default 1');
    expect(inline.config.functionFile).to.equal(codeFileOf('export default 1', undefined)).and.match(/^\/tmp\/fnhost-code\/[0-9a-f]{64}\.js$/);
    expect(inline.env).to.include({ FNHOST_GATEWAY_URL: 'http://gw:8081', FNHOST_EGRESS_PROXY: 'http://gw:3128', PORT: '8080', HOME: '/tmp', NODE_ENV: 'production' });
    const digest = `sha256:${'a'.repeat(64)}`;
    const ref = parseSpecialization({ env: { FNHOST_CODE_DIGEST: digest, FNHOST_CODE_SIZE: '10', FNHOST_RUNTIME_TOKEN: token } }, own, true);
    expect(ref.config.functionFile).to.equal(`/tmp/fnhost-code/${'a'.repeat(64)}.js`);
    expect(ref.config.codeRef).to.deep.equal({ digest, size: 10 });
    expect(() => parseSpecialization({ env: {} }, own, true)).to.throw(SpecializeError, /exactly one of code/);
    expect(() => parseSpecialization({ env: { FNHOST_CODE_DIGEST: digest, FNHOST_CODE_SIZE: '10' }, code: 'x' }, own, true)).to.throw(SpecializeError, /exactly one of code/);
    expect(() => parseSpecialization({ env: {}, code: 1 }, own, true)).to.throw(SpecializeError, /code must be a string/);
    for (const name of ['FNHOST_GATEWAY_URL', 'FNHOST_EGRESS_PROXY', 'FNHOST_FUNCTION_FILE']) {
      expect(() => parseSpecialization({ env: { [name]: '/x' }, code: 'x' }, own, true), name).to.throw(SpecializeError, new RegExp(`must not set ${name}`));
    }
    // One machine's warm pool takes no code in the request.
    expect(() => parseSpecialization({ env: { FNHOST_FUNCTION_FILE: '/f' }, code: 'x' }, {})).to.throw(SpecializeError, 'unknown field "code"');
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
