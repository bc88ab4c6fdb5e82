import { expect } from 'chai';
import type { FunctionRecord } from '@fnhost/core';
import { parseTestRequest } from '../../gateway/src/api/functions.ts';
import { loadConfig } from '../../gateway/src/config.ts';
import { bearerToken, digest, sameSecret } from '../../gateway/src/auth.ts';
import { configHash, lastLine, moduleExtension } from '../../gateway/src/executor/local.ts';
import { loadsAsModule } from '../../gateway/src/executor/module-file.ts';
import { messageFrom500 } from '../../gateway/src/invoke/bodies.ts';
import { errorBody } from '../../gateway/src/invoke/errors.ts';
import { RuntimeTokens } from '../../gateway/src/internal/tokens.ts';
import { FnhostError, NotFoundError } from '@fnhost/core';

const fn = (over: Partial<FunctionRecord> = {}): FunctionRecord => ({
  function_id: '00000000-0000-4000-8000-000000000001', name: 'f', namespace: 'default', code: 'export default () => {}', env: {}, routes: [],
  timeout_seconds: 30, memory_mib: 128, active: true, retention: { type: 'none' }, schedule: null, created_at: '', updated_at: '', ...over,
});

describe('gateway pure helpers', () => {
  it('error_message of a 500 answered without throwing: message, else error, else HTTP 500', () => {
    const b = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));
    expect(messageFrom500(b({ error: 'x', message: 'db down' }), 'application/json')).to.equal('db down');
    expect(messageFrom500(b({ error: 'only error' }), undefined)).to.equal('only error');
    expect(messageFrom500(b({ error: { message: 'nested' } }), 'application/json')).to.equal('nested');
    expect(messageFrom500(b([1, 2]), 'application/json')).to.equal('HTTP 500');
    expect(messageFrom500(b('plain text'), 'text/plain')).to.equal('plain text');
    expect(messageFrom500(b(' database down\n'), 'text/html; charset=utf-8')).to.equal('database down');
    expect(messageFrom500(b('x'.repeat(5000)), undefined)).to.equal('x'.repeat(1024) + '…');
    expect(messageFrom500(Buffer.from([0xff, 0xfe, 0x00]), undefined)).to.equal('HTTP 500');
    expect(messageFrom500(b('plain'), 'application/octet-stream')).to.equal('HTTP 500');
    expect(messageFrom500(b('{broken'), 'application/json')).to.equal('HTTP 500');
    expect(messageFrom500(b({ message: '' }), 'application/json')).to.equal('HTTP 500');
  });

  it('function:test request: default POST / with {}, and each field checked', () => {
    expect(parseTestRequest(undefined)).to.deep.equal({ method: 'POST', path: '/', headers: { 'content-type': 'application/json', 'content-length': '2' }, body: Buffer.from('{}') });
    const get = parseTestRequest({ method: 'get', path: '/a', query: { x: '1', y: ['2', '3'] } });
    expect(get).to.deep.include({ method: 'GET', path: '/a?x=1&y=2&y=3', body: null });
    const text = parseTestRequest({ headers: { 'Content-Type': 'text/plain' }, body: 'hi' });
    expect(text.body!.toString()).to.equal('hi');
    expect(() => parseTestRequest({ path: 'no-slash' })).to.throw(/no-slash/);
    expect(() => parseTestRequest({ method: 'G E T' })).to.throw(/not an HTTP method/);
    expect(() => parseTestRequest({ extra: 1 })).to.throw(/"extra"/);
    expect(() => parseTestRequest({ headers: { 'x-a': 'line\nbreak' } })).to.throw(/single-line/);
  });

  it('module file extension follows the module syntax', () => {
    expect(moduleExtension('export default (req, res) => {}')).to.equal('.mjs');
    expect(moduleExtension("import fs from 'node:fs';\nmodule.exports = () => {}")).to.equal('.mjs');
    expect(moduleExtension('module.exports = (req, res) => res.json({})')).to.equal('.js');
    expect(moduleExtension('// export default is in a comment only when indented oddly\nexports.handler = () => {}')).to.equal('.js');
    // Module syntax after another statement on the same line, and a minified bundle's export list.
    expect(moduleExtension('const id = 1; export default (req, res) => res.json({ id });')).to.equal('.mjs');
    expect(moduleExtension('var a=1;function h(q,s){s.end()}export{h as default};')).to.equal('.mjs');
    // A dynamic import() is CommonJS too.
    expect(moduleExtension("module.exports = async () => (await import('node:os')).cpus()")).to.equal('.js');
  });

  it('a load failure is placed as the loader parsed the code: a module when module syntax stopped CommonJS', () => {
    expect(loadsAsModule('module.exports = (req, res) => {')).to.equal(false);
    expect(loadsAsModule('const a = import.meta.url; module.exports = () => a')).to.equal(true);
    expect(loadsAsModule('export default (req, res) => {')).to.equal(true);
    expect(loadsAsModule('module.exports = () => {}')).to.equal(false);
  });

  it('config hash changes with what the runtime is started from, and only that', () => {
    const base = fn();
    expect(configHash(base)).to.equal(configHash(fn()));
    for (const change of [{ code: 'x' }, { env: { A: '1' } }, { routes: ['/a'] }, { timeout_seconds: 5 }, { memory_mib: 64 }]) {
      expect(configHash(fn(change)), JSON.stringify(change)).to.not.equal(configHash(base));
    }
    expect(configHash(fn({ active: false, retention: { type: 'count', count: 3 } }))).to.equal(configHash(base));
  });

  it('picks the telling line of a runtime stderr', () => {
    expect(lastLine('boom\nError: bad thing\n    at x\n\nNode.js v24.21.0\n')).to.equal('Error: bad thing');
    expect(lastLine('just this\n')).to.equal('just this');
  });

  it('reads configuration with defaults, and names a bad variable', () => {
    const c = loadConfig({}, '/srv');
    expect(c).to.deep.include({ port: 8080, host: '127.0.0.1', dataDir: '/srv/.fnhost', token: undefined, publicUrl: undefined, maxTimeoutSeconds: 900, trustProxy: false });
    expect(loadConfig({ FNHOST_PUBLIC_URL: 'https://fn.example.com/', FNHOST_TRUST_PROXY: 'true', PORT: '0' }, '/')).to.deep.include({ publicUrl: 'https://fn.example.com', trustProxy: true, port: 0 });
    expect(() => loadConfig({ PORT: '70000' })).to.throw(/PORT=70000/);
    expect(() => loadConfig({ FNHOST_PUBLIC_URL: 'ftp://x' })).to.throw(/FNHOST_PUBLIC_URL/);
    expect(() => loadConfig({ FNHOST_TOKEN: 'short' })).to.throw(/FNHOST_TOKEN is shorter/);
    expect(() => loadConfig({ FNHOST_TRUST_PROXY: 'maybe' })).to.throw(/FNHOST_TRUST_PROXY="maybe"/);
  });

  it('gives the admin panel a listener of its own: the port after PORT, any free port with PORT=0, never PORT itself', () => {
    expect(loadConfig({}, '/')).to.deep.include({ adminPort: 8081, adminHost: '127.0.0.1' });
    expect(loadConfig({ PORT: '9000', HOST: '0.0.0.0' }, '/')).to.deep.include({ adminPort: 9001, adminHost: '0.0.0.0' });
    expect(loadConfig({ PORT: '0' }, '/')).to.deep.include({ adminPort: 0 });
    expect(loadConfig({ FNHOST_ADMIN_PORT: '9443', FNHOST_ADMIN_HOST: '127.0.0.1', HOST: '0.0.0.0' }, '/')).to.deep.include({ adminPort: 9443, adminHost: '127.0.0.1', host: '0.0.0.0' });
    expect(() => loadConfig({ PORT: '8080', FNHOST_ADMIN_PORT: '8080' })).to.throw(/FNHOST_ADMIN_PORT=8080 is PORT too/);
    expect(() => loadConfig({ PORT: '65535' })).to.throw(/set FNHOST_ADMIN_PORT/);
    expect(() => loadConfig({ FNHOST_ADMIN_PORT: 'x' })).to.throw(/FNHOST_ADMIN_PORT="x"/);
  });

  it('reads the egress proxy settings, and names a bad one', () => {
    expect(loadConfig({}, '/srv')).to.deep.include({ egressListen: undefined, egressMaxConnections: 64, egressIdleTimeoutMs: 300_000 });
    expect(loadConfig({ FNHOST_EGRESS_LISTEN: '0.0.0.0:3128', FNHOST_EGRESS_MAX_CONNECTIONS: '10', FNHOST_EGRESS_IDLE_TIMEOUT_MS: '5000' }, '/')).to.deep.include({
      egressListen: { host: '0.0.0.0', port: 3128 },
      egressMaxConnections: 10,
      egressIdleTimeoutMs: 5000,
    });
    expect(loadConfig({ FNHOST_EGRESS_LISTEN: '[::]:0' }, '/').egressListen).to.deep.equal({ host: '::', port: 0 });
    for (const bad of ['3128', 'host', 'host:99999', '::1:3128', 'host:port']) {
      expect(() => loadConfig({ FNHOST_EGRESS_LISTEN: bad }), bad).to.throw(new RegExp(`FNHOST_EGRESS_LISTEN="${bad.replace(/[[\]]/g, '\\$&')}" must be host:port`));
    }
    expect(() => loadConfig({ FNHOST_EGRESS_MAX_CONNECTIONS: '0' })).to.throw(/FNHOST_EGRESS_MAX_CONNECTIONS=0 is out of range/);
  });

  it('tokens: bearer parsing, constant-time digests, per-function runtime tokens', () => {
    expect(bearerToken('Bearer abc')).to.equal('abc');
    expect(bearerToken('bearer  abc ')).to.equal('abc');
    expect(bearerToken('Basic abc')).to.equal(undefined);
    expect(sameSecret('s3cret', digest('s3cret'))).to.equal(true);
    expect(sameSecret('s3cre', digest('s3cret'))).to.equal(false);
    const tokens = new RuntimeTokens();
    const t = tokens.tokenFor('fn-a');
    expect(tokens.tokenFor('fn-a')).to.equal(t);
    expect(tokens.verify(t)).to.equal('fn-a');
    expect(tokens.verify(t + 'x')).to.equal(undefined);
    expect(tokens.verify('fn-b.' + t.split('.')[1])).to.equal(undefined);
    expect(tokens.verify(undefined)).to.equal(undefined);
  });

  it('error bodies hide internals unless exposed', () => {
    expect(errorBody(new NotFoundError('function "x" not found'))).to.deep.equal({ status: 404, body: '{"error":"not_found","message":"function \\"x\\" not found"}' });
    expect(JSON.parse(errorBody(new FnhostError('store_unavailable', 503, 'SQLITE_BUSY at /secret/path', { expose: false })).body)).to.deep.equal({ error: 'store_unavailable', message: 'internal error' });
    expect(errorBody(new Error('TypeError inside'))).to.deep.equal({ status: 500, body: '{"error":"internal","message":"internal error"}' });
  });
});

describe('gateway log ids', () => {
  it('have core format and do not repeat across pool refills', async () => {
    const { fastLogId } = await import('../../gateway/src/invoke/ids.ts');
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const id = fastLogId();
      expect(id).to.match(/^log_[A-Za-z0-9_-]{20}$/);
      seen.add(id);
    }
    expect(seen.size).to.equal(2000);
  });

  it('sort in the order they were made, across milliseconds and pool refills', async () => {
    const { fastLogId } = await import('../../gateway/src/invoke/ids.ts');
    const { newLogId } = await import('../../core/src/ids.ts');
    const made: string[] = [];
    const t0 = Date.UTC(2026, 10, 29);
    for (let i = 0; i < 1000; i++) made.push(fastLogId(t0 + i * 37));
    // core's generator shares the prefix: an id it makes at a later millisecond sorts after.
    made.push(newLogId(t0 + 1000 * 37));
    expect([...made].sort()).to.deep.equal(made);
  });
});
