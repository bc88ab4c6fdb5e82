import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../../helpers/platform.ts';
import { pollUntil } from '../../helpers/wait.ts';
import { managementApi, targetOf, type ManagementApi } from './gateway-target.ts';
import { Neighbour, openDescriptors, type Target } from './neighbour.ts';
import { attackCall } from './attacker.ts';

// Attack (issue 27 point 2): a deployed function's child processes open connections to the
// gateway's sockets inside its sandbox, the internal API (/run/fnhost-gateway/gateway.sock) and the
// egress proxy (egress.sock), and hold them without a request. Shown at 021272b: the gateway reached
// its descriptor limit, the API stopped answering, other functions' calls failed, and it exited on
// an uncaught EMFILE. With the bound on open connections per function (64 on the internal API, 128
// on the egress proxy, known at accept because every sandbox has sockets of its own) the rest are
// refused at once, the admitted ones end at the first-request timeout, and the neighbour is served.
//
// Bounded: 4 child processes, 2 per socket, each opening CONNECTIONS connections (4 x 500 =
// 2,000 in all, twice the gateway's lowered limit of 1,024 descriptors), held HOLD_MS at most; Unix
// sockets only. Needs root and bubblewrap (the sandbox), as test/gateway/sandbox.int.test.ts.

const NOFILE = 1024;
const CHILDREN = 2;
const CONNECTIONS = 500;
const INTERNAL_LIMIT = 64;
const EGRESS_LIMIT = 128;
const FIRST_REQUEST_TIMEOUT_MS = 3_000;
/** Connections are counted alive CHECK_MS after they were opened (before the first-request timeout), and at HOLD_MS (after it). */
const CHECK_MS = 1_500;
const HOLD_MS = 6_000;

/** One child process: opens `count` connections to a socket, sends nothing, reports how many were still open at CHECK_MS and at HOLD_MS. */
const FLOOD = `
import { connect } from 'node:net';
const [path, count, checkMs, holdMs] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const open = new Set();
let connected = 0, refusedWith429 = 0;
const errors = {};
await Promise.all(Array.from({ length: count }, () => new Promise((resolve) => {
  const s = connect(path);
  s.on('connect', () => { connected++; open.add(s); resolve(); });
  s.on('data', (d) => { if (String(d).startsWith('HTTP/1.1 429')) refusedWith429++; });
  s.on('error', (e) => { errors[e.code] = (errors[e.code] || 0) + 1; resolve(); });
  s.on('close', () => { open.delete(s); resolve(); });
})));
await sleep(checkMs);
const aliveAtCheck = open.size;
await sleep(holdMs - checkMs);
const aliveAtEnd = open.size;
process.stdout.write(JSON.stringify({ connected, aliveAtCheck, aliveAtEnd, refusedWith429, errors }));
process.exit(0);
`;

const ATTACKER = `
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
export default async (req, res) => {
  writeFileSync('/tmp/flood.mjs', Buffer.from('${Buffer.from(FLOOD).toString('base64')}', 'base64'));
  const runs = [];
  for (let i = 0; i < ${CHILDREN}; i++) for (const sock of ['gateway.sock', 'egress.sock']) {
    runs.push(new Promise((resolve) => {
      const child = spawn(process.execPath, ['/tmp/flood.mjs', '/run/fnhost-gateway/' + sock, '${CONNECTIONS}', '${CHECK_MS}', '${HOLD_MS}'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '', err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('close', () => { try { resolve({ sock, ...JSON.parse(out) }); } catch { resolve({ sock, failed: (out + err).slice(0, 300) }); } });
    }));
  }
  res.json(await Promise.all(runs));
};`;

interface FloodResult { sock: string; connected: number; aliveAtCheck: number; aliveAtEnd: number; refusedWith429: number; errors: Record<string, number>; failed?: string }

describe('attack: a function floods the gateway\'s sockets from inside its sandbox (issue 27 point 2)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let target: Target;

  const api: ManagementApi = (method, path, body) => managementApi(gw)(method, path, body);

  before(async function () {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (sandboxed runtimes under uids of their own)');
    gw = await startGateway({
      prefix: ['prlimit', `--nofile=${NOFILE}:${NOFILE}`, '--'],
      // The runtimes' own descriptor limit may not pass the gateway's hard limit (prlimit runs under the runtime's uid).
      env: { FNHOST_RUNTIME_FIRST_REQUEST_TIMEOUT_MS: String(FIRST_REQUEST_TIMEOUT_MS), FNHOST_SANDBOX_MAX_OPEN_FILES: String(NOFILE) },
    });
    target = targetOf(gw);
    const info = await api('GET', '/api/v1/info');
    expect(info.body.sandbox?.enabled, `the sandbox must be on for this attack: ${JSON.stringify(info.body)}`).to.equal(true);
  });
  after(async () => {
    await gw?.stop();
  });

  it('holds the function to its bound on each socket, ends idle connections, keeps the descriptors far from the limit and serves the neighbour', async () => {
    const attacker = await target.createFunction('socket-flooder', ATTACKER, { timeout_seconds: 60, memory_mib: 256 });
    const n = await Neighbour.start(target);

    let peakFds = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peakFds = Math.max(peakFds, await openDescriptors(gw.pid).catch(() => 0));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    n.startProbing();
    const attack = await attackCall(gw.url, attacker.function_id);
    const during = await n.stopProbing();
    console.log(`      neighbour during the flood: ${JSON.stringify(during)}`);
    n.expectServed(during, 'socket flood');
    sampling = false;
    await sampler;

    expect(attack.status, `the attack call: ${attack.body.slice(0, 500)}`).to.equal(200);
    const results = JSON.parse(attack.body) as FloodResult[];
    for (const r of results) expect(r.failed, `a flood child failed: ${r.failed}`).to.equal(undefined);
    const sum = (sock: string, k: 'connected' | 'aliveAtCheck' | 'aliveAtEnd' | 'refusedWith429') => results.filter((r) => r.sock === sock).reduce((a, r) => a + r[k], 0);
    // Before the first-request timeout: at most the bound of each socket still open, the rest refused (a 429 read, or closed at once).
    expect(sum('gateway.sock', 'aliveAtCheck'), `internal API connections open: ${JSON.stringify(results)}`).to.be.at.most(INTERNAL_LIMIT);
    expect(sum('egress.sock', 'aliveAtCheck'), `egress connections open: ${JSON.stringify(results)}`).to.be.at.most(EGRESS_LIMIT);
    expect(sum('gateway.sock', 'refusedWith429') + sum('egress.sock', 'refusedWith429'), 'refused connections read a 429').to.be.greaterThan(0);
    // After it: none left, though the children never closed one.
    expect(sum('gateway.sock', 'aliveAtEnd') + sum('egress.sock', 'aliveAtEnd'), `connections left after the first-request timeout: ${JSON.stringify(results)}`).to.equal(0);
    // The gateway's descriptors stayed far from its limit (the bound of both sockets plus its own work).
    expect(peakFds, 'the gateway\'s peak descriptor count').to.be.below(NOFILE - 256);

    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    const count = (reason: string) => Number(new RegExp(`fnhost_refused_total\\{reason="${reason}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
    // Every connection the gateway accepted past the bound is counted (some of the flood never reaches it: a full accept queue answers EAGAIN).
    expect(sum('gateway.sock', 'connected'), `internal API connections made: ${JSON.stringify(results)}`).to.be.greaterThan(INTERNAL_LIMIT);
    expect(sum('egress.sock', 'connected'), `egress connections made: ${JSON.stringify(results)}`).to.be.greaterThan(EGRESS_LIMIT);
    expect(count('internal_connections_per_function'), 'refusals counted (internal)').to.be.at.least(sum('gateway.sock', 'connected') - INTERNAL_LIMIT);
    expect(count('egress_connections_per_function'), 'refusals counted (egress)').to.be.at.least(sum('egress.sock', 'connected') - EGRESS_LIMIT);
    console.log(`      flood: ${JSON.stringify(results)}; refusals counted: internal ${count('internal_connections_per_function')}, egress ${count('egress_connections_per_function')}; the gateway's peak descriptors ${peakFds}; neighbour quiet p95 ${n.quiet!.p95Ms.toFixed(1)} ms`);
    // Logged, rate-limited, naming the function: one line per socket (the flood lasts less than the log's interval).
    await pollUntil('the refusal log line', async () => gw.output().includes('connection refused'), 5_000, 100);
    const lines = gw.output().split('\n').filter((l) => l.includes('connection refused'));
    expect(lines.length, lines.join('\n')).to.be.within(1, 4);
    expect(lines.every((l) => l.includes(attacker.function_id)), lines.join('\n')).to.equal(true);

    await n.expectRecovered('socket flood');
    n.close();
  });
});
