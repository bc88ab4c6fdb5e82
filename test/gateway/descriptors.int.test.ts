import { connect, type Socket } from 'node:net';
import { readdir, readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { pollUntil } from '../helpers/wait.ts';
import { attackedGateway, counters } from './attack/gateway-target.ts';
import { isAlive } from './harness.ts';
import { Agent } from 'node:http';
import { callFrom } from './attack/neighbour.ts';

// The gateway's descriptors for real: as root it raises its hard RLIMIT_NOFILE at start
// (prlimit --pid); and when descriptors do run out (EMFILE, here by leaving only the least
// reserve (FNHOST_FD_RESERVE=0) under a lowered limit and filling the rest from several client addresses), the
// warm pool's refill fails in its timer, is counted, and the gateway keeps running and
// serves once the connections are gone.

async function nofileOf(pid: number): Promise<string> {
  const line = (await readFile(`/proc/${pid}/limits`, 'utf8')).split('\n').find((l) => l.startsWith('Max open files'))!;
  return line.split(/\s+/).slice(3, 5).join(':');
}

/**
 * Cold starts tried until one's refill meets EMFILE: a refill that found a descriptor free for a
 * moment succeeds, and the next function's cold start takes the pool's runtime again (CI met 4
 * refills in a row that found one).
 */
const COLD_STARTS = 8;

describe('gateway descriptors (issue 27)', function () {
  this.timeout(300_000);
  let gw: RunningGateway | undefined;

  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
  });

  it('raises RLIMIT_NOFILE to FNHOST_NOFILE at start where it may (root with CAP_SYS_RESOURCE), and bounds connections from what it has', async () => {
    gw = await startGateway({ prefix: ['prlimit', '--nofile=1024:1024', '--'], env: { FNHOST_NOFILE: '8192' } });
    const status = await readFile('/proc/self/status', 'utf8');
    const capEff = BigInt('0x' + /CapEff:\s+([0-9a-f]+)/.exec(status)![1]!);
    const mayRaise = process.getuid?.() === 0 && (capEff & (1n << 24n)) !== 0n; // CAP_SYS_RESOURCE
    if (mayRaise) {
      expect(await nofileOf(gw.pid)).to.equal('8192:8192');
      expect(gw.output()).to.match(/"msg":"connection bounds","nofile":8192,"fd_reserve":2048,"max_connections":6144/);
    } else {
      // A container without CAP_SYS_RESOURCE (as this test machine's): said at start, and the bounds come from the limit given.
      expect(await nofileOf(gw.pid)).to.equal('1024:1024');
      expect(gw.output()).to.match(/"msg":"descriptor limit","soft":1024,"hard":1024,"note":"(raising RLIMIT_NOFILE to 8192 with prlimit failed|not root)/);
      expect(gw.output()).to.match(/"msg":"connection bounds","nofile":1024,"fd_reserve":256,"max_connections":768/);
    }
  });

  it('a warm-pool refill that meets EMFILE is counted and retried; the gateway keeps running', async () => {
    // No reserve (FNHOST_FD_RESERVE=0), so callers can take every descriptor; runtimes idle out after 2 s.
    // The heads may take 2 minutes: the gateway does not close the half-sent requests while the test
    // runs, so no descriptor comes free (with 8 s, the closes and the attack's reconnects left one free
    // now and then on a loaded machine, and refills found it: CI at 280509f met 8 in a row).
    const started = await attackedGateway(1024, { FNHOST_FD_RESERVE: '0', FNHOST_HEADERS_TIMEOUT_MS: '120000', FNHOST_RUNTIME_IDLE_SECONDS: '2' });
    gw = started.gw;
    // Several functions: a refill that found a descriptor free for a moment (the attack frees and takes
    // them again) succeeds, and then the next function's cold start takes the pool's runtime again.
    const fns = [];
    for (let i = 1; i <= COLD_STARTS; i++) fns.push(await started.target.createFunction(`cold${i}`, `export default (req, res) => res.send('ok');`));
    const fn = fns[0]!;
    // The cold call goes on a connection opened before the attack (a new one could not be accepted).
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await callFrom(`${gw.url}/healthz`, '127.0.0.1', agent)).status).to.equal(200);
    await pollUntil('the functions\' runtimes to idle out', async () => (gw!.output().match(/runtime stopped after idling/g) ?? []).length >= fns.length, 30_000, 100);
    // The cold call below must find a generic runtime waiting in the pool, so that its refill is
    // what meets EMFILE. On a loaded machine the pool's first one may have been ready only after the
    // create started a runtime of its own, or its replacement may still be starting: wait for one.
    const count = (re: RegExp) => (gw!.output().match(re) ?? []).length;
    const pooled = () => count(/warm-pool runtime ready/g) - count(/"msg":"runtime started"[^\n]*"warm_pool":true/g);
    await pollUntil('the warm pool to hold a runtime', async () => pooled() >= 1, 60_000, 100);
    const readyBefore = count(/warm-pool runtime ready/g);
    // Half-sent requests from 12 addresses, each closed one opened again: every descriptor the gateway frees is taken.
    const { port } = new URL(gw.url);
    const open = new Set<Socket>();
    let attacking = true;
    let attempts = 0;
    const openOne = (a: number): void => {
      if (!attacking || attempts++ > 40_000) return;
      const s = connect({ host: '127.0.0.1', port: Number(port), localAddress: `127.0.0.${a}` });
      open.add(s);
      s.on('error', () => undefined);
      s.on('connect', () => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
      // Opened again at once: a descriptor the gateway frees is free for as short a time as we can make it.
      s.on('close', () => {
        open.delete(s);
        setImmediate(() => openOne(a));
      });
    };
    for (let a = 10; a < 22; a++) for (let i = 0; i < 100; i++) openOne(a);
    try {
      await pollUntil('the gateway to run out of descriptors', async () => (await readdir(`/proc/${gw!.pid}/fd`)).length >= 1020, 30_000, 100);
      // A cold start takes the pool's runtime; its refill 300 ms later meets EMFILE.
      const refillFailed = () => /"task":"warm_pool_refill","error":"[^"]*(EMFILE|Too many open files)/.test(gw!.output());
      for (const target of fns) {
        const call = callFrom(`${gw.url}/invoke/${target.function_id}/`, '127.0.0.1', agent, 30_000);
        const failed = await pollUntil('the refill to fail', async () => refillFailed(), 8_000, 100).then(() => true, () => false);
        await call;
        if (failed) {
          if (process.env.FNHOST_TEST_VERBOSE) process.stderr.write(`descriptors: a refill met EMFILE after cold start ${fns.indexOf(target) + 1} of ${fns.length}\n`);
          break;
        }
      }
      expect(refillFailed(), `a refill met EMFILE within ${fns.length} cold starts`).to.equal(true);
    } finally {
      attacking = false;
      for (const s of open) s.destroy();
      agent.destroy();
    }
    expect(isAlive(gw.pid), 'the gateway is still running').to.equal(true);
    // Once the descriptors are back, calls are served and a new cold start finds the pool refilled.
    await pollUntil('a call after the attack', async () => (await fetch(`${gw!.url}/invoke/${fn.function_id}/`)).status === 200, 30_000, 250);
    const seen = await counters(gw);
    expect(seen['fnhost_background_failures_total:warm_pool_refill'] ?? 0).to.be.greaterThan(0);
    await pollUntil('the warm pool to be refilled', async () => count(/warm-pool runtime ready/g) > readyBefore && pooled() >= 1, 30_000, 250);
    expect(isAlive(gw.pid)).to.equal(true);
  });

  it('the main listener\'s global bound closes connections past it at accept, the admin listener\'s per-client bound answers 503; both counted', async () => {
    gw = await startGateway({ env: { FNHOST_MAX_CONNECTIONS: '60', FNHOST_ADMIN_MAX_CONNECTIONS_PER_CLIENT: '8' } });
    const held: Socket[] = [];
    const hold = (port: number, address: string) => new Promise<string>((resolve) => {
      const s = connect({ host: '127.0.0.1', port, localAddress: address });
      held.push(s);
      let got = '';
      s.on('error', () => resolve('error'));
      s.on('data', (d: Buffer) => (got += d.toString('latin1')));
      s.on('close', () => resolve(got === '' ? 'closed' : got.split('\r\n')[0]!));
      s.on('connect', () => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
    });
    try {
      // 100 connections from 10 addresses (10 each, under the per-client bound): 40 past the global bound.
      const main = Number(new URL(gw.url).port);
      for (let a = 30; a < 40; a++) for (let i = 0; i < 10; i++) void hold(main, `127.0.0.${a}`);
      const admin = Number(new URL(gw.adminUrl).port);
      const adminOutcomes: Array<Promise<string>> = [];
      for (let i = 0; i < 12; i++) adminOutcomes.push(hold(admin, '127.0.0.50'));
      await pollUntil('the refusals to be counted', async () => {
        const c = await counters(gw!).catch(() => ({}) as Record<string, number>);
        return (c['fnhost_refused_total:connections_total'] ?? 0) >= 40 && (c['fnhost_refused_total:connections_per_client'] ?? 0) >= 4 ? c : undefined;
      }, 30_000, 200).catch(async () => {
        // /metrics itself needs a connection: try again once the held ones are gone.
        for (const s of held) s.destroy();
        return counters(gw!);
      });
      // Of the 12 admin connections from one address, the 4 past its bound of 8 get a 503 at once; the 8 others
      // stay open until the header timeout ends them (408).
      const adminLines = await Promise.all(adminOutcomes.map((o) => Promise.race([o, new Promise<string>((r) => setTimeout(() => r('open'), 5000))])));
      expect(adminLines.filter((l) => l === 'HTTP/1.1 503 Service Unavailable'), JSON.stringify(adminLines)).to.have.length(4);
      expect(adminLines.filter((l) => l === 'open' || l === 'HTTP/1.1 408 Request Timeout'), JSON.stringify(adminLines)).to.have.length(8);
    } finally {
      for (const s of held) s.destroy();
    }
    const seen = await counters(gw);
    expect(seen['fnhost_refused_total:connections_total']).to.be.at.least(40);
    expect(seen['fnhost_refused_total:connections_per_client']).to.be.at.least(4);
    expect(gw.output()).to.match(/"msg":"a connection was refused: the listener holds its bound of connections","reason":"connections_total"/);
    // Rate-limited: far fewer lines than refusals.
    expect((gw.output().match(/"reason":"connections_total"/g) ?? []).length).to.be.at.most(3);
  });
});
