import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../../helpers/platform.ts';
import { managementApi, targetOf, type ManagementApi } from './gateway-target.ts';
import { folderBytes, Neighbour, type Target } from './neighbour.ts';
import { TOKEN_IN_MEMORY, attackCall } from './attacker.ts';

// Attack (issue 27 point 5): a function posts console output to the internal API flat out, with
// its runtime token, naming execution ids that do not exist (each
// forced a flush of the record queue and a second store write) or its own call's id. Shown at
// 021272b: 1.2 GB in 20 s, every post 204, a neighbour's p95 from 21 to 313 ms. With the rate bound
// per function (1 MiB/s, burst 8 MiB; 50 posts/s, burst 100) posts past it get 429 with
// Retry-After before their body is read, and posts naming no execution of the function cost no
// store work; the neighbour is served.
//
// The token: at 021272b the attacker read it from /proc/self/environ; since issue 28 it is in no
// environment, but the runtime keeps it in its memory for its own calls, and the handler's worker
// thread shares that address space. So the attacker here finds it as one would, by scanning its
// own process's writable memory (./attacker.ts TOKEN_IN_MEMORY): the rate bound must hold for a
// function that has its token, however it got it.
//
// The attacker's own CPU is capped (ATTACKER_CPU, its cpu.limit): what this test judges is what
// its posts cost the gateway. Uncapped, its runtime took a quarter of the machine under two busy
// loops per core, and that alone, with no post sent at all, put the neighbour's p95 at 124-129 ms
// against a bound of about 130 (issue 30): the neighbour's runtime shares the sandboxes' CPU weight
// with the attacker's, the bound that cpu-children.int.test.ts judges. Capped at 200m it still
// posts 40-110 times a second, past both of the rate's bounds.
//
// Bounded: per mode one attack call of ATTACK_MS, 8 posts in flight, at most MAX_POSTS posts of
// ~1 MiB each; Unix socket and loopback only. Needs root and bubblewrap (the sandbox) and cgroups.

const ATTACK_MS = 4_000;
const MAX_POSTS = 3_000;
const RATE_BYTES = 1024 * 1024;
const BURST_BYTES = 8 * 1024 * 1024;
/** The attacker's cpu.limit (see above). */
const ATTACKER_CPU = '200m';

const POSTER = `
import { request } from 'node:http';
${TOKEN_IN_MEMORY}
export default async (req, res) => {
  const token = runtimeToken(req.query.fn);
  if (token === undefined) return res.status(500).json({ error: 'no token found in the process memory' });
  const own = req.headers['x-fnhost-execution-id'];
  const mode = req.query.mode;
  const line = 'x'.repeat(8000);
  // Each of the 8 senders builds its body once and posts it over and over: the gateway keeps no
  // unknown id, so a repeated one costs it what a new one would, and the attacker's CPU goes to
  // posting rather than to building 1 MiB strings, which slowed the neighbour as much as the posts
  // (its runtime shares the sandboxes' CPU weight with this one's).
  const body = () => JSON.stringify({ executions: Array.from({ length: 32 }, (_, i) => ({
    id: mode === 'own' ? own : 'log_nosuch' + i + '_' + Math.random().toString(36).slice(2, 12),
    lines: Array.from({ length: 4 }, (_, j) => [j, 'o', line]), dropped_lines: 0, dropped_bytes: 0,
  })) });
  const bodies = Array.from({ length: 8 }, body);
  const postBytes = Buffer.byteLength(bodies[0]);
  const post = (text) => new Promise((resolve) => {
    const r = request({ socketPath: '/run/fnhost-gateway/gateway.sock', path: '/internal/v1/console', method: 'POST',
      headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (answer) => {
      answer.resume();
      answer.on('end', () => resolve({ status: answer.statusCode, retryAfter: answer.headers['retry-after'] }));
    });
    r.on('error', (e) => resolve({ status: e.code }));
    r.end(text);
  });
  const until = Date.now() + ${ATTACK_MS};
  const started = Date.now();
  let sent = 0, acceptedBytes = 0;
  const statuses = {};
  let retryAfter;
  const one = async (text) => {
    while (Date.now() < until && sent < ${MAX_POSTS}) {
      sent++;
      const r = await post(text);
      statuses[r.status] = (statuses[r.status] || 0) + 1;
      if (r.status === 204) acceptedBytes += postBytes;
      if (r.status === 429) retryAfter ??= r.retryAfter;
    }
  };
  await Promise.all(bodies.map(one));
  res.json({ own, sent, statuses, acceptedBytes, retryAfter, seconds: (Date.now() - started) / 1000, postBytes });
};`;

interface PostResult { own: string; sent: number; statuses: Record<string, number>; acceptedBytes: number; retryAfter?: string; seconds: number; postBytes: number }

describe('attack: a function floods the console endpoint (issue 27 point 5)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let target: Target;

  const api: ManagementApi = (method, path, body) => managementApi(gw)(method, path, body);

  const attack = (functionId: string, mode: string) => attackCall(gw.url, functionId, `/?mode=${mode}&fn=${functionId}`);

  const consoleRefusals = async () => Number(/fnhost_refused_total\{reason="console_rate"\} (\d+)/.exec(await (await fetch(`${gw.url}/metrics`)).text())?.[1]);

  before(async function () {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (sandboxed runtimes under uids of their own)');
    gw = await startGateway({
      prefix: ['prlimit', '--nofile=1024:1024', '--'],
      env: { FNHOST_WARM_POOL: '0', FNHOST_SANDBOX_MAX_OPEN_FILES: '1024' },
    });
    target = targetOf(gw);
  });
  after(async () => {
    await gw?.stop();
  });

  for (const mode of ['unknown', 'own'] as const) {
    it(`posts naming ${mode === 'own' ? 'its own call' : 'executions that do not exist'}: refused past the rate bound with 429 and Retry-After; the neighbour is served`, async () => {
      const poster = await target.createFunction(`console-${mode}`, POSTER, { timeout_seconds: 60 });
      const limited = await api('PUT', `/api/v1/functions/${poster.function_id}/scaling`, { cpu: { limit: ATTACKER_CPU } });
      expect(limited.status, JSON.stringify(limited.body)).to.equal(200);
      const n = await Neighbour.start(target);
      const refusalsBefore = await consoleRefusals();
      const dataBefore = await folderBytes(gw.dataDir);
      n.startProbing();
      const result = await attack(poster.function_id, mode);
      const during = await n.stopProbing();
      expect(result.status, result.body.slice(0, 500)).to.equal(200);
      const r = JSON.parse(result.body) as PostResult;
      console.log(`      ${mode}: ${JSON.stringify({ ...r, own: undefined })}; neighbour quiet p95 ${n.quiet!.p95Ms.toFixed(1)} ms, during ${JSON.stringify(during)}`);
      n.expectServed(during, `console flood (${mode})`);

      const refused = (r.statuses['429'] ?? 0) + (r.statuses.EPIPE ?? 0) + (r.statuses.ECONNRESET ?? 0);
      expect(r.statuses['429'] ?? 0, `refused posts: ${JSON.stringify(r.statuses)}`).to.be.greaterThan(0);
      // A refused post larger than 64 KiB is not read: its sender may see the connection cut (EPIPE, ECONNRESET) before the 429.
      expect(Object.keys(r.statuses).every((s) => ['204', '429', 'EPIPE', 'ECONNRESET'].includes(s)), `only 204 and refusals: ${JSON.stringify(r.statuses)}`).to.equal(true);
      expect(Number(r.retryAfter), 'Retry-After on a 429').to.be.at.least(1);
      // What was accepted: the burst, the rate over the attack's seconds, and one post of slack.
      expect(r.acceptedBytes, 'bytes accepted').to.be.at.most(BURST_BYTES + RATE_BYTES * (r.seconds + 1) + r.postBytes);
      // The data folder: an execution's output is stored once and bounded (64 KiB), unknown ids not at all;
      // 8 MiB covers the neighbour's records and SQLite's WAL.
      const grown = (await folderBytes(gw.dataDir)) - dataBefore;
      expect(grown, 'the data folder\'s growth').to.be.at.most(8 * 1024 * 1024);

      expect((await consoleRefusals()) - refusalsBefore, 'console_rate refusals counted').to.be.at.least(r.statuses['429']!).and.at.most(refused);
      expect(gw.output()).to.include('console output refused');
      expect(gw.output()).to.include(poster.function_id);

      if (mode === 'own') {
        // Its own output was stored (the first post of its id), bounded as any execution's.
        const logs = await api('GET', `/api/v1/functions/${poster.function_id}/logs?limit=5`);
        expect(logs.status).to.equal(200);
      }
      await n.expectRecovered(`console flood (${mode})`);
      n.close();
    });
  }
});
