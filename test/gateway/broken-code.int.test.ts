import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHarness, type Harness } from './harness.ts';

// Issue 20, item 1: code that does not parse or exports no handler is refused at create and
// deploy (400, line and column in the user's source, no server path), the runtime having loaded
// it (in its sandbox); a function that cannot load anyway answers its public callers a generic
// body, while its record and function:test carry the full text.

/** Texts that would give away where the gateway keeps code (data folder, sandbox folder, file name). */
function expectNoServerPath(text: string, dataDir: string): void {
  expect(text).not.to.include(dataDir);
  expect(text).not.to.match(/\/fn\/|\/functions\/|\.mjs|\.cjs|file:\/\//);
}

describe('gateway: broken code (issue 20.1)', function () {
  this.timeout(120_000);
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h?.close();
  });

  it('refuses at create a module with a syntax error: 400 with the line and column, and stores nothing', async () => {
    const r = await h.api('POST', '/api/v1/functions', { name: 'syntax', code: 'export default function (req, res) {\n  res.json({ a: 1 }\n}\n' });
    expect(r.status, JSON.stringify(r.body)).to.equal(400);
    expect(r.body.error).to.equal('invalid_code');
    expect(r.body.message).to.equal('code does not parse: SyntaxError: missing ) after argument list (line 3, column 1)');
    expectNoServerPath(r.body.message, h.dataDir);
    expect((await h.api('GET', '/api/v1/functions/syntax')).status).to.equal(404);
  });

  it('accepts valid code in any layout: module syntax after another statement on its line, a minified export list, CommonJS with a dynamic import()', async () => {
    const layouts: Record<string, string> = {
      'one-line-module': 'const id = 7; export default (req, res) => res.json({ id });',
      'minified-module': 'var id=8;function h(q,s){s.json({id})}export{h as default};',
      'cjs-dynamic-import': "module.exports = async (req, res) => res.json({ id: (await import('node:path')).sep === '/' ? 9 : 0 });",
      // A module found only by the runtime loader's second try (a comment before its export).
      'module-by-loader': '/* the handler */ export default (req, res) => res.json({ id: 10 });',
    };
    for (const [name, code] of Object.entries(layouts)) {
      const created = await h.api('POST', '/api/v1/functions', { name, code });
      expect(created.status, `${name}: ${JSON.stringify(created.body)}`).to.equal(201);
      const r = await fetch(`${h.url}/invoke/${created.body.function_id}`);
      expect(r.status, name).to.equal(200);
      expect(((await r.json()) as { id: number }).id, name).to.be.oneOf([7, 8, 9, 10]);
    }
  });

  it('refuses a CommonJS module that does not parse, naming its line and column', async () => {
    const r = await h.api('POST', '/api/v1/functions', { name: 'syntax-cjs', code: 'module.exports = (req, res) => {\n  res.send(1;\n};\n' });
    expect(r.status).to.equal(400);
    expect(r.body.message).to.match(/^code does not parse: SyntaxError: .+ \(line 2, column 13\)$/);
    expect((await h.api('GET', '/api/v1/functions/syntax-cjs')).status).to.equal(404);
  });

  it('refuses at create a module that exports no handler', async () => {
    const r = await h.api('POST', '/api/v1/functions', { name: 'nohandler', code: 'export const notAHandler = 1;\n' });
    expect(r.status, JSON.stringify(r.body)).to.equal(400);
    expect(r.body).to.deep.include({ error: 'invalid_code' });
    expect(r.body.message).to.match(/^code exports no handler: use `export default function \(req, res\)/);
    expectNoServerPath(r.body.message, h.dataDir);
    expect((await h.api('GET', '/api/v1/functions/nohandler')).status).to.equal(404);
  });

  it('the check that runs the module\'s top level runs in the function\'s sandbox, not in the gateway', async () => {
    // This machine can sandbox: a fallback here is a failure, not a skip.
    expect((await h.api('GET', '/api/v1/info')).body.sandbox).to.deep.equal({ enabled: true });
    // A hostile top level that exports a handler only where it can read the gateway's database:
    // in the gateway process (or unsandboxed) it would, and the check would pass. In the sandbox it
    // cannot, exports nothing, and create is refused.
    const db = JSON.stringify(join(h.dataDir, 'fnhost.db'));
    const code = `const fs = require('node:fs');\nlet stolen;\ntry { stolen = fs.readFileSync(${db}).length; } catch {}\nif (stolen !== undefined) module.exports = (req, res) => res.json({ stolen });\n`;
    expect(readFileSync(join(h.dataDir, 'fnhost.db')).length).to.be.greaterThan(0);
    const r = await h.api('POST', '/api/v1/functions', { name: 'snoop', code });
    expect(r.status, JSON.stringify(r.body)).to.equal(400);
    expect(r.body.error).to.equal('invalid_code');
    expect(r.body.message).to.match(/^code exports no handler/);
  });

  it('refuses a deploy of broken code, and the old code keeps serving', async () => {
    const fn = await h.createFunction('deployed', 'export default (req, res) => res.json({ version: 1 });\n');
    expect(await (await h.invoke(fn.function_id)).json()).to.deep.equal({ version: 1 });
    const broken = await h.api('PATCH', '/api/v1/functions/deployed', { code: 'export default (req, res) => {\n  res.json({ version: 2 };\n};\n' });
    expect(broken.status, JSON.stringify(broken.body)).to.equal(400);
    expect(broken.body.message).to.match(/^code does not parse: SyntaxError: .+ \(line 2, column \d+\)$/);
    const noHandler = await h.api('PATCH', '/api/v1/functions/deployed', { code: 'module.exports = { version: 3 };\n' });
    expect(noHandler.status).to.equal(400);
    expect(noHandler.body.message).to.match(/^code exports no handler/);
    const r = await h.invoke(fn.function_id);
    expect(r.status).to.equal(200);
    expect(await r.json()).to.deep.equal({ version: 1 });
    expect((await h.api('GET', '/api/v1/functions/deployed')).body.code).to.equal('export default (req, res) => res.json({ version: 1 });\n');
    // A good deploy still goes through and serves at once.
    const good = await h.api('PATCH', '/api/v1/functions/deployed', { code: 'export default (req, res) => res.json({ version: 4 });\n' });
    expect(good.status).to.equal(200);
    expect(await (await h.invoke(fn.function_id)).json()).to.deep.equal({ version: 4 });
  });

  it('refuses at create and deploy a module whose top level throws (400 with the error and its place); with the env it needs, or allow_load_error=true, it is stored', async () => {
    const code = 'const key = process.env.API_KEY;\nif (!key) throw new Error("API_KEY is not set");\nexport default (req, res) => res.json({ key });\n';
    const refused = await h.api('POST', '/api/v1/functions', { name: 'throws-at-load', code });
    expect(refused.status, JSON.stringify(refused.body)).to.equal(400);
    expect(refused.body).to.deep.equal({ error: 'invalid_code', message: 'code throws while loading: Error: API_KEY is not set (line 2, column 17)' });
    expectNoServerPath(refused.body.message, h.dataDir);
    expect((await h.api('GET', '/api/v1/functions/throws-at-load')).status).to.equal(404);
    // Given the variable, the same code loads and serves at once.
    const withEnv = await h.api('POST', '/api/v1/functions', { name: 'throws-at-load', code, env: { API_KEY: 'k1' } });
    expect(withEnv.status, JSON.stringify(withEnv.body)).to.equal(201);
    expect(await (await h.invoke(withEnv.body.function_id)).json()).to.deep.equal({ key: 'k1' });
    // A deploy that takes the variable away is refused, and the serving version keeps serving.
    const unset = await h.api('PATCH', '/api/v1/functions/throws-at-load', { env: {} });
    expect(unset.status).to.equal(400);
    expect(unset.body.message).to.equal('code throws while loading: Error: API_KEY is not set (line 2, column 17)');
    expect(await (await h.invoke(withEnv.body.function_id)).json()).to.deep.equal({ key: 'k1' });
    const bad = await h.api('PATCH', '/api/v1/functions/throws-at-load?allow_load_error=maybe', { env: {} });
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.equal('allow_load_error must be true or false, got "maybe"');
    // Asked to store it anyway, it is stored.
    const anyway = await h.api('PATCH', '/api/v1/functions/throws-at-load?allow_load_error=true', { env: {} });
    expect(anyway.status, JSON.stringify(anyway.body)).to.equal(200);
    expect((await h.invoke(withEnv.body.function_id)).status).to.equal(500);
    // A change that is not of what the module loads with is not refused for it.
    const timeout = await h.api('PATCH', '/api/v1/functions/throws-at-load', { timeout_seconds: 12 });
    expect(timeout.status, JSON.stringify(timeout.body)).to.equal(200);
  });

  it('a function that cannot load anyway answers anonymous callers a generic 500; its record and function:test have the full text', async () => {
    // Stored anyway (allow_load_error=true): it parses and would export a handler; whether it loads depends on its env.
    const code = 'const key = process.env.API_KEY;\nif (!key) throw new Error("API_KEY is not set");\nexport default (req, res) => res.json({ key });\n';
    const created = await h.api('POST', '/api/v1/functions?allow_load_error=true', { name: 'needs-env', code });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const fn = created.body;
    const r = await h.invoke(fn.function_id, '/x');
    expect(r.status).to.equal(500);
    const text = await r.text();
    expect(JSON.parse(text)).to.deep.equal({ error: 'function_failed_to_load', message: 'the function could not be loaded; its owner can see why in its logs' });
    expect(text).not.to.include('API_KEY');
    r.headers.forEach((_value, name) => expect(name).not.to.match(/^x-fnhost-/));
    const logs = await h.logs('needs-env');
    expect(logs.logs).to.have.length(1);
    expect(logs.logs[0].status_code).to.equal(500);
    expect(logs.logs[0].error_message).to.equal('the module threw while loading: Error: API_KEY is not set (line 2, column 17)');
    const test = await h.api('POST', '/api/v1/functions/needs-env/test', {});
    expect(test.status).to.equal(200);
    expect(test.body.status_code).to.equal(500);
    expect(test.body.error_message).to.equal('the module threw while loading: Error: API_KEY is not set (line 2, column 17)');
    expect(test.body.body).to.deep.equal({ error: 'function_failed_to_load', message: 'the function could not be loaded; its owner can see why in its logs' });
    expectNoServerPath(JSON.stringify(test.body), h.dataDir);
    // Its own /healthz path gives a caller no error text either.
    const health = await h.invoke(fn.function_id, '/healthz');
    expect(await health.text()).not.to.include('API_KEY');
    // Given the env, it loads.
    const fixed = await h.api('PATCH', '/api/v1/functions/needs-env', { env: { API_KEY: 'k' } });
    expect(fixed.status).to.equal(200);
    expect(await (await h.invoke(fn.function_id)).json()).to.deep.equal({ key: 'k' });
  });
});
