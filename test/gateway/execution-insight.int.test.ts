import { expect } from 'chai';
import { isAlive, startHarness, waitFor, type Harness } from './harness.ts';

// Execution insight on one machine (docs/gateway.md "Execution insight"): each record's console
// output handed over by the runtime (deferred output included, bounded), cold_start and wait_ms,
// and per-function latency from the histogram kept at write time. Real gateway, runtimes, SQLite.

const PRINTER = `
export default (req, res) => {
  console.log('first', { n: 1 });
  console.error('to stderr');
  console.info('two\\nlines');
  setTimeout(() => console.log('after the answer'), 30);
  res.json({ ok: true });
}`;

describe('execution insight: console output, cold start and latency', function () {
  this.timeout(120_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { FNHOST_RUNTIME_IDLE_SECONDS: '1' } });
  });
  after(async () => {
    await h?.close();
  });

  const detail = (ref: string, id: string) => h.api('GET', `/api/v1/functions/${ref}/logs/${id}`);
  const lastLogId = async (ref: string): Promise<string> => (await h.logs(ref, '?limit=1')).logs[0].id;
  const withConsole = (ref: string, id: string) =>
    waitFor(async () => {
      const r = await detail(ref, id);
      return r.status === 200 && r.body.console !== null ? r.body : undefined;
    }, `the console output of ${id}`);

  it('keeps what the handler wrote, both streams in order with offsets, output after the answer included', async () => {
    const fn = await h.createFunction('printer', PRINTER);
    const r = await h.invoke(fn.function_id);
    expect(r.status).to.equal(200);
    await r.arrayBuffer();
    const id = await lastLogId('printer');
    const body = await withConsole('printer', id);
    expect(body.id).to.equal(id);
    expect(body.status_code).to.equal(200);
    expect(body.console.lines.map((l: { stream: string; text: string }) => [l.stream, l.text])).to.deep.equal([
      ['stdout', 'first { n: 1 }'],
      ['stderr', 'to stderr'],
      ['stdout', 'two'],
      ['stdout', 'lines'],
      ['stdout', 'after the answer'],
    ]);
    const offsets = body.console.lines.map((l: { at_ms: number }) => l.at_ms);
    expect(offsets.every((o: number) => Number.isInteger(o) && o >= 0)).to.equal(true);
    expect([...offsets].sort((a, b) => a - b)).to.deep.equal(offsets);
    expect(body.console.dropped_lines).to.equal(0);
    // Listings carry no output (P3).
    const list = await h.logs('printer');
    expect(list.logs[0]).to.not.have.property('console');
  });

  it('a logged error\'s stack names the function\'s own frames, relative, and none of the runtime\'s (no host path)', async () => {
    const fn = await h.createFunction('logs-error', 'function explode() { throw new Error("boom"); }\nexport default (req, res) => {\n  try { explode(); } catch (err) { console.error(err); }\n  res.json({ ok: true });\n};\n');
    await (await h.invoke(fn.function_id)).arrayBuffer();
    const body = await withConsole('logs-error', await lastLogId('logs-error'));
    const text = body.console.lines.map((l: { text: string }) => l.text).join('\n');
    expect(text).to.match(/^Error: boom\n {4}at explode \(<module>:1:\d+\)\n {4}at default \(<module>:3:\d+\)/);
    expect(text).not.to.match(/runtime-image|worker\.ts|node:internal|file:\/\/|\/tmp\/|\/work\//);
  });

  it('bounds each execution at 1,000 lines and 64 KiB, saying how much was dropped', async () => {
    const fn = await h.createFunction('flood', `export default (req, res) => {
      const n = Number(req.query.n), size = Number(req.query.size);
      for (let i = 0; i < n; i++) console.log(String(i).padEnd(size, '.'));
      res.json({});
    }`);
    await (await h.invoke(fn.function_id, '?n=1500&size=10')).arrayBuffer();
    const many = await withConsole('flood', await lastLogId('flood'));
    expect(many.console.lines).to.have.length(1000);
    expect(many.console.lines[999].text).to.equal('999'.padEnd(10, '.'));
    expect(many.console.dropped_lines).to.equal(500);
    expect(many.console.dropped_bytes).to.equal(5000);

    await (await h.invoke(fn.function_id, '?n=100&size=1000')).arrayBuffer();
    const big = await withConsole('flood', await lastLogId('flood'));
    expect(big.console.lines).to.have.length(65);
    expect(big.console.dropped_lines).to.equal(35);
    expect(big.console.dropped_bytes).to.equal(35_000);
  });

  it('answers a clear 404 for an unknown, malformed or other function\'s log id', async () => {
    const other = await h.createFunction('other', 'export default (req, res) => res.json({})');
    await (await h.invoke(other.function_id)).arrayBuffer();
    const othersId = await lastLogId('other');
    for (const id of ['log_doesnotexist0000000', 'not-a-log-id', othersId]) {
      const r = await detail('printer', id);
      expect(r.status, id).to.equal(404);
      expect(r.body.error).to.equal('log_not_found');
      expect(r.body.message).to.include('printer').and.include('has no execution log');
    }
    const noFunction = await detail('nosuchfunction', othersId);
    expect(noFunction.status).to.equal(404);
    expect(noFunction.body.error).to.equal('not_found');
  });

  it('attack: one function\'s runtime token cannot put console output on another function\'s record; a wrong token is refused', async () => {
    const post = (token: string, body: unknown) => fetch(`${h.url}/internal/v1/console`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post('wrong-token', { executions: [] })).status).to.equal(401);
    // The victim's record, with no console output (its handler writes none).
    const victim = await h.createFunction('victim', 'export default (req, res) => res.json({})');
    const attacker = await h.createFunction('attacker', 'export default (req, res) => res.json({})');
    await (await h.invoke(victim.function_id)).arrayBuffer();
    const victimLog = await lastLogId('victim');
    const forged = { executions: [{ id: victimLog, lines: [[0, 'o', 'forged line']], dropped_lines: 0, dropped_bytes: 0 }] };
    const r = await post(h.platform.runtimeToken(attacker.function_id), forged);
    expect(r.status).to.equal(204);
    const d = await detail('victim', victimLog);
    expect(d.status).to.equal(200);
    expect(d.body.console).to.equal(null);
    // Nor does it land under the attacker's name: the attacker has no record with that id.
    expect((await detail('attacker', victimLog)).status).to.equal(404);
    // The victim's own runtime's post is kept.
    const own = await post(h.platform.runtimeToken(victim.function_id), { executions: [{ id: victimLog, lines: [[1, 'e', 'own line']], dropped_lines: 0, dropped_bytes: 0 }] });
    expect(own.status).to.equal(204);
    expect((await detail('victim', victimLog)).body.console.lines).to.deep.equal([{ at_ms: 1, stream: 'stderr', text: 'own line' }]);
    // A post over its bounds is refused, naming the bound.
    const tooMany = await post(h.platform.runtimeToken(victim.function_id), { executions: Array.from({ length: 33 }, () => ({ id: victimLog, lines: [] })) });
    expect(tooMany.status).to.equal(400);
    expect((await tooMany.json()).message).to.include('limit is 32');
  });

  it('says whether a call waited for a runtime to start, and how long it waited', async () => {
    const fn = await h.createFunction('sleepy', 'export default (req, res) => res.json({})');
    await (await h.invoke(fn.function_id)).arrayBuffer();
    await (await h.invoke(fn.function_id)).arrayBuffer();
    const warm = (await h.logs('sleepy', '?limit=1')).logs[0];
    expect(warm.cold_start).to.equal(false);
    expect(warm.wait_ms).to.be.a('number');
    // Idle for a second: the runtime stops, and the next call starts one.
    const pid = (await waitFor(() => h.platform.executor.pid(fn.function_id), 'a runtime'))!;
    await waitFor(() => !isAlive(pid), 'the idle runtime to end');
    await (await h.invoke(fn.function_id)).arrayBuffer();
    const cold = (await h.logs('sleepy', '?limit=1')).logs[0];
    expect(cold.cold_start).to.equal(true);
    expect(cold.wait_ms).to.be.a('number').and.at.least(0).and.at.most(cold.execution_time_ms);
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).to.match(/^fnhost_cold_starts_total [1-9]/m);
    expect(metrics).to.not.include('sleepy');
  });

  it('gives per-function counts, cold starts and percentiles over the last hour and day', async () => {
    const fn = await h.createFunction('timed', 'export default (req, res) => res.json({})');
    for (let i = 0; i < 5; i++) await (await h.invoke(fn.function_id)).arrayBuffer();
    const r = await h.api('GET', '/api/v1/functions/timed/latency');
    expect(r.status).to.equal(200);
    for (const window of ['last_hour', 'last_day']) {
      const s = r.body[window];
      expect(s.count, window).to.equal(5);
      expect(s.p50_ms).to.be.a('number');
      expect(s.p50_ms).to.be.at.most(s.p95_ms);
      expect(s.p95_ms).to.be.at.most(s.p99_ms);
      expect(s.cold_starts).to.be.at.most(5);
    }
    const none = await h.createFunction('unused', 'export default (req, res) => res.json({})');
    const empty = await h.api('GET', `/api/v1/functions/${none.function_id}/latency`);
    expect(empty.body.last_hour).to.deep.equal({ count: 0, cold_starts: 0, p50_ms: null, p95_ms: null, p99_ms: null });
  });
});

describe('execution insight: FNHOST_CONSOLE_CAPTURE=off', function () {
  this.timeout(120_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { FNHOST_CONSOLE_CAPTURE: 'off' } });
  });
  after(async () => {
    await h?.close();
  });

  it('stores no console output, even what a runtime posts, and still records cold_start and latency', async () => {
    const fn = await h.createFunction('quiet', PRINTER);
    await (await h.invoke(fn.function_id)).arrayBuffer();
    const log = (await h.logs('quiet')).logs[0];
    expect(log.cold_start).to.be.a('boolean');
    const posted = await fetch(`${h.url}/internal/v1/console`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.platform.runtimeToken(fn.function_id)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ executions: [{ id: log.id, lines: [[0, 'o', 'posted anyway']], dropped_lines: 0, dropped_bytes: 0 }] }),
    });
    expect(posted.status).to.equal(204);
    const detail = await h.api('GET', `/api/v1/functions/quiet/logs/${log.id}`);
    expect(detail.status).to.equal(200);
    expect(detail.body.console).to.equal(null);
    expect((await h.api('GET', '/api/v1/functions/quiet/latency')).body.last_hour.count).to.equal(1);
  });
});
