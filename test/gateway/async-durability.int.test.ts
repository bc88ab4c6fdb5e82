import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { pollUntil } from '../helpers/wait.ts';
import { databaseUrl } from './async-helpers.ts';

// Issue 33, durability at make test's size: CALLS async calls accepted
// (loopback, a bounded number at once), the gateway SIGKILLed and started
// again on the same store twice while they drain. Every accepted call must
// end succeeded (its success is written only after the function answered
// 200, so it ran at least once); a call that ran twice did so because the
// gateway running it was killed: its lost attempt is on the call (lease
// expired), so duplicates are counted and bounded by what could be in
// flight at the two kills. On SQLite (the data folder) and on MongoDB.
// FNHOST_ASYNC_DURABILITY_CALLS runs it at another size (the 10,000,
// by hand: bench/RESULTS.md); above the list's 1,000 each call is read by id.

const TOKEN = 'a-long-enough-admin-token-for-async-durability';
const CALLS = Number(process.env.FNHOST_ASYNC_DURABILITY_CALLS ?? 500);
if (!Number.isInteger(CALLS) || CALLS < 10) throw new Error(`FNHOST_ASYNC_DURABILITY_CALLS ${process.env.FNHOST_ASYNC_DURABILITY_CALLS} is not a whole number of at least 10`);
/** Deadlines grow with the size: a drain of 500 calls on a loaded machine took up to a minute. */
const SCALE = Math.max(1, CALLS / 500);
const IN_FLIGHT = 4;
const KILLS = 2;
const ENV = {
  FNHOST_ASYNC_RETRY_BASE_MS: '50',
  FNHOST_ASYNC_POLL_MS: '100',
  FNHOST_ASYNC_LEASE_MARGIN_MS: '500',
  FNHOST_ASYNC_MAX_IN_FLIGHT: String(IN_FLIGHT),
};

async function api(gw: RunningGateway, method: string, path: string, body?: unknown) {
  const r = await fetch(gw.url + path, { method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
}

async function calls(gw: RunningGateway, ids: readonly string[]): Promise<any[]> {
  if (CALLS <= 1000) {
    const r = await api(gw, 'GET', '/api/v1/functions/worker/async?state=queued,running,succeeded,failed,dead&limit=1000');
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.calls;
  }
  // Past the list's bound: each call by id, 16 at a time.
  const out: any[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < ids.length) {
      const r = await api(gw, 'GET', `/api/v1/functions/worker/async/${ids[next++]}`);
      if (r.status === 200) out.push(r.body);
    }
  }));
  return out;
}

/** How many calls ended: those succeeded (the list, up to 1,000), or beyond it those no longer queued or running (the final check reads each by id). */
async function succeeded(gw: RunningGateway): Promise<number> {
  if (CALLS <= 1000) {
    const r = await api(gw, 'GET', '/api/v1/functions/worker/async?state=succeeded&limit=1000');
    return r.body.calls.length;
  }
  const r = await api(gw, 'GET', '/api/v1/functions/worker/async?state=queued,running&limit=1000');
  return r.body.calls.length >= 1000 ? 0 : CALLS - r.body.calls.length;
}

async function kill(gw: RunningGateway): Promise<void> {
  const exited = new Promise((resolve) => gw.process.once('exit', resolve));
  gw.process.kill('SIGKILL');
  await exited;
}

function describeDurability(storeName: string, storeEnv: () => Record<string, string>, prepare?: () => Promise<void>, cleanup?: () => Promise<void>) {
  describe(`async durability across gateway kills (${storeName}, ${CALLS} calls, ${KILLS} SIGKILLs)`, function () {
    this.timeout(300_000 * SCALE);
    let dataDir: string;
    let gw: RunningGateway | undefined;

    before(async () => {
      await prepare?.();
      dataDir = await mkdtemp(join(tmpdir(), 'fnhost-async-dur-'));
    });
    after(async () => {
      await gw?.stop();
      await rm(dataDir, { recursive: true, force: true });
      await cleanup?.();
    });

    it('runs every accepted call at least once; the repeats are only the attempts the kills interrupted', async () => {
      const env = { ...ENV, ...storeEnv() };
      gw = await startGateway({ token: TOKEN, dataDir, keepDataDir: true, env, startTimeoutMs: 90_000 });
      const created = await api(gw, 'POST', '/api/v1/functions', {
        // A time limit far above the handler's 40 ms: a runtime started on a loaded machine after a kill must not time out.
        name: 'worker', timeout_seconds: 15,
        code: `export default async (req, res) => { await new Promise((r) => setTimeout(r, 40)); res.json({ n: req.body.n }) }`,
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const fnId = created.body.function_id;

      const accepted: string[] = [];
      let next = 0;
      const url = gw.url;
      await Promise.all(Array.from({ length: 8 }, async () => {
        while (next < CALLS) {
          const n = next++;
          const r = await fetch(`${url}/async-invoke/${fnId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
          const body = await r.json() as { async_id: string };
          expect(r.status, JSON.stringify(body)).to.equal(202);
          accepted.push(body.async_id);
        }
      }));
      expect(new Set(accepted).size).to.equal(CALLS);

      // Killed while draining: at a fifth and at a half of the calls done.
      for (const at of [CALLS / 5, CALLS / 2]) {
        const running = gw;
        await pollUntil(`${at} calls succeeded`, async () => (await succeeded(running)) >= at, 120_000 * SCALE, 100);
        const done = await succeeded(running);
        expect(done, 'still draining at the kill').to.be.below(CALLS);
        await kill(running);
        gw = await startGateway({ token: TOKEN, dataDir, keepDataDir: true, env, startTimeoutMs: 90_000 });
      }
      const last = gw!;
      let seen: any[] = [];
      const all = await pollUntil('every call succeeded', async () => {
        seen = await calls(last, accepted);
        return seen.length === CALLS && seen.every((c) => c.state === 'succeeded') ? seen : undefined;
      }, 240_000 * SCALE, 1000).catch((err: Error) => {
        const states: Record<string, number> = {};
        for (const c of seen) states[c.state] = (states[c.state] ?? 0) + 1;
        const stuck = seen.filter((c) => c.state !== 'succeeded').slice(0, 3);
        throw new Error(`${err.message}: ${seen.length} calls by state ${JSON.stringify(states)}; e.g. ${JSON.stringify(stuck)}`);
      });

      expect(all.map((c) => c.async_id).sort()).to.deep.equal([...accepted].sort());
      const repeated = all.filter((c) => c.attempts.length > 1);
      for (const c of repeated) {
        // Each extra attempt is one a killed gateway held: its lease expired, nothing was recorded of it.
        const lost = c.attempts.slice(0, -1);
        expect(lost.every((a: any) => a.status_code === null && a.log_id === null), JSON.stringify(c.attempts)).to.equal(true);
        expect(c.attempts.at(-1).status_code).to.equal(200);
      }
      expect(repeated.length, 'calls run again after a kill').to.be.at.most(KILLS * IN_FLIGHT);
      process.stdout.write(`      ${storeName}: ${CALLS} accepted, ${CALLS} succeeded, ${repeated.length} run again after the ${KILLS} kills\n`);
    });
  });
}

if (process.env.ASYNC_DUR_ONLY !== 'mongo') describeDurability('SQLite', () => ({}));

let mongo: MongoTestServer | undefined;
if (process.env.ASYNC_DUR_ONLY !== 'sqlite') describeDurability('MongoDB', () => ({ MONGODB_URL: databaseUrl(mongo!, 'fnhost_async_dur') }), async () => {
  mongo = await startMongoServer();
}, async () => {
  await mongo?.stop();
});
