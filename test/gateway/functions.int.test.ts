import { expect } from 'chai';
import { limits } from '@fnhost/core';
import { startHarness, type Harness } from './harness.ts';

describe('gateway behind a trusted proxy (FNHOST_TRUST_PROXY=1)', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { FNHOST_TRUST_PROXY: '1' } });
  });
  after(async () => {
    await h?.close();
  });

  it('keeps the X-Forwarded-For and X-Forwarded-Proto the peer sent, appending the peer', async () => {
    const fn = await h.createFunction('fwd', `export default (req, res) => res.json({ xff: req.headers['x-forwarded-for'], proto: req.headers['x-forwarded-proto'] })`);
    const r = await h.invoke(fn.function_id, '', { headers: { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' } });
    expect(await r.json()).to.deep.equal({ xff: '203.0.113.7, 127.0.0.1', proto: 'https' });
  });
});

describe('gateway management API: functions', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { FNHOST_PUBLIC_URL: 'https://fn.example.com/' } });
  });
  after(async () => {
    await h?.close();
  });

  it('creates with defaults and gets every field, with invocation_url from FNHOST_PUBLIC_URL', async () => {
    const created = await h.createFunction('hello-world', 'export default (req, res) => res.json({ hi: req.body })');
    expect(created.function_id).to.match(/^[0-9a-f-]{36}$/);
    expect(created).to.include({ name: 'hello-world', namespace: 'default', timeout_seconds: 30, memory_mib: 128, active: true, total_executions: 0 });
    expect(created.retention).to.deep.equal({ type: 'none' });
    expect(created.schedule).to.equal(null);
    expect(created.invocation_url).to.equal(`https://fn.example.com/invoke/${created.function_id}`);
    const byName = await h.api('GET', '/api/v1/functions/hello-world');
    const byId = await h.api('GET', `/api/v1/functions/${created.function_id}`);
    expect(byName.body).to.deep.equal(byId.body);
    expect(byName.body.code).to.include('res.json');
    const list = await h.api('GET', '/api/v1/functions');
    expect(list.body.functions.map((f: { name: string }) => f.name)).to.include('hello-world');
    expect(list.body.functions[0]).to.not.have.property('code');
  });

  it('pods and autoscaling are cluster mode only: one machine shows none and refuses a change with 400 (it takes only cpu)', async () => {
    const fn = await h.createFunction('no-scaling', 'export default (req, res) => res.json({})');
    expect(fn).to.not.have.property('scaling');
    const r = await h.api('PUT', '/api/v1/functions/no-scaling/scaling', { autoscale: { max_replicas: 3 } });
    expect(r.status).to.equal(400);
    expect(r.body.message).to.contain('cluster mode');
    const bad = await h.api('PUT', '/api/v1/functions/no-scaling/scaling', { cpu: { limit: '1Gi' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.equal('cpu.limit must be a CPU quantity such as 250m or 0.5, got "1Gi"');
  });

  it('rejects bad input with 400 naming the value and the rule, 409 for a taken name, 404 for an unknown ref', async () => {
    const bad = await h.api('POST', '/api/v1/functions', { name: 'Bad_Name', code: 'export default () => {}' });
    expect(bad.status).to.equal(400);
    expect(bad.body).to.deep.include({ error: 'invalid_argument' });
    expect(bad.body.message).to.match(/Bad_Name.*DNS-1123/);
    const missing = await h.api('POST', '/api/v1/functions', { name: 'nocode' });
    expect(missing.status).to.equal(400);
    expect(missing.body.message).to.match(/code is required/);
    const unknown = await h.api('POST', '/api/v1/functions', { name: 'x', code: 'export default () => {}', colour: 'red' });
    expect(unknown.body.message).to.match(/"colour"/);
    const timeout = await h.api('POST', '/api/v1/functions', { name: 'x', code: 'export default () => {}', timeout_seconds: 100000 });
    expect(timeout.body.message).to.match(/timeout.*100000/);
    const taken = await h.api('POST', '/api/v1/functions', { name: 'hello-world', code: 'export default () => {}' });
    expect(taken.status).to.equal(409);
    expect(taken.body.error).to.equal('conflict');
    const nf = await h.api('GET', '/api/v1/functions/nope');
    expect(nf.status).to.equal(404);
    expect(nf.body).to.deep.equal({ error: 'not_found', message: 'function "nope" not found' });
    const notJson = await fetch(`${h.url}/api/v1/functions`, { method: 'POST', headers: { authorization: 'Bearer test-admin-token-0123456789', 'content-type': 'application/json' }, body: '{oops' });
    expect(notJson.status).to.equal(400);
    expect((await notJson.json()).message).to.match(/not valid JSON/);
  });

  it('limits management bodies to MAX_API_BODY_BYTES with 413', async () => {
    const r = await h.api('POST', '/api/v1/functions', { name: 'huge', code: 'x'.repeat(limits.MAX_API_BODY_BYTES + 10) });
    expect(r.status).to.equal(413);
    expect(r.body.error).to.equal('payload_too_large');
  });

  it('401 without or with a wrong token, constant-time compared; health needs none', async () => {
    expect((await h.api('GET', '/api/v1/functions', undefined, 'wrong')).status).to.equal(401);
    const none = await fetch(`${h.url}/api/v1/functions`);
    expect(none.status).to.equal(401);
    expect(await none.json()).to.deep.equal({ error: 'unauthorized', message: 'the management API needs Authorization: Bearer <token>' });
    expect((await fetch(`${h.url}/healthz`)).status).to.equal(200);
    expect((await fetch(`${h.url}/readyz`)).status).to.equal(200);
    const unknownRoute = await fetch(`${h.url}/nothing-here`);
    expect(unknownRoute.status).to.equal(404);
    expect((await unknownRoute.json()).error).to.equal('not_found');
  });

  it('function:test runs once through the same path (default POST / with {}) and returns status, duration, body, log id', async () => {
    const t = await h.api('POST', '/api/v1/functions/hello-world/test');
    expect(t.status).to.equal(200);
    expect(t.body).to.include({ status_code: 200, error_message: null });
    expect(t.body.body).to.deep.equal({ hi: {} });
    expect(t.body.log_id).to.match(/^log_/);
    expect(Number.isInteger(t.body.execution_time_ms)).to.equal(true);
    const custom = await h.api('POST', '/api/v1/functions/hello-world/test', { method: 'put', path: '/x', query: { a: '1' }, body: [1, 2] });
    expect(custom.body.body).to.deep.equal({ hi: [1, 2] });
    const logs = await h.logs('hello-world');
    expect(logs.logs[0]).to.include({ id: custom.body.log_id, trigger: 'test' });
    expect((await h.api('GET', '/api/v1/functions/hello-world')).body.total_executions).to.equal(2);
    const bad = await h.api('POST', '/api/v1/functions/hello-world/test', { method: 'GET', body: 'x' });
    expect(bad.status).to.equal(400);
  });

  it('serves Prometheus metrics with invocations by status class, durations, queue depth, drops and restarts', async () => {
    const text = await (await fetch(`${h.url}/metrics`)).text();
    expect(text).to.match(/fnhost_invocations_total\{trigger="test",status_class="2xx"\} 2/);
    expect(text).to.match(/fnhost_invocation_duration_seconds_bucket\{le="\+Inf"\} \d+/);
    for (const name of ['fnhost_log_queue_depth', 'fnhost_log_records_dropped_total', 'fnhost_runtime_restarts_total']) expect(text).to.include(`# TYPE ${name}`);
  });
});
