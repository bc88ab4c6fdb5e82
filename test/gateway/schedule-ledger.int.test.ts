import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { openMongoStores } from '@fnhost/core/store/mongo/index.ts';
import type { Stores } from '@fnhost/core';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { TestClock, startHarness, waitFor, type Harness, type HarnessOptions } from './harness.ts';

// The ledger of scheduled runs on a gateway with real runtimes and a real
// store (SQLite file; MongoDB through the wire-protocol server of
// test/README.md), on a test clock: runs on time, a run fired by hand, runs
// missed because the previous one was still going or the function was
// inactive, and a gateway stopped and started again across planned times
// (the newest missed run starts late within the starting deadline, the others
// are recorded missed).

const HANDLER = `export default (req, res) => res.json({ trigger: req.headers['x-fnhost-trigger'], method: req.method, body: req.body })`;
const MIN = 60_000;

async function ledger(h: Harness, ref: string, query = ''): Promise<any> {
  const r = await h.api('GET', `/api/v1/functions/${ref}/schedule/runs${query}`);
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  return r.body;
}

function summary(runs: any[]): string[] {
  return runs.map((r) => `${r.planned_at.slice(11, 19)} ${r.outcome}${r.manual ? ' manual' : ''}${r.missed_reason ? ' ' + r.missed_reason : ''}${r.lag_ms !== null ? ' lag=' + r.lag_ms : ''}`);
}

function describeLedger(storeName: string, openStores: (() => () => Promise<Stores>) | undefined, prepare?: () => Promise<void>, cleanup?: () => Promise<void>) {
  describe(`schedule ledger on a gateway (${storeName}, test clock)`, function () {
    this.timeout(120_000);
    const clock = new TestClock();
    let dataDir: string;
    let h: Harness | undefined;
    const start = async (env: Record<string, string> = {}) => {
      const options: HarnessOptions = { clock, dataDir, env: { FNHOST_SCHEDULE_STARTING_DEADLINE_SECONDS: '90', ...env } };
      if (openStores !== undefined) options.openStores = openStores();
      h = await startHarness(options);
      return h;
    };

    before(async () => {
      await prepare?.();
      dataDir = await mkdtemp(join(tmpdir(), 'fnhost-ledger-'));
    });
    after(async () => {
      await h?.close();
      await rm(dataDir, { recursive: true, force: true });
      await cleanup?.();
    });

    it('enters each scheduled run with its record and lag, lists the next planned runs in UTC, and a run fired by hand is marked manual', async () => {
      const gw = await start();
      await gw.createFunction('ticker', HANDLER);
      expect((await gw.api('PUT', '/api/v1/functions/ticker/schedule', { cron: '* * * * *' })).status).to.equal(200);
      clock.advance(30_000); // 10:01:00
      await waitFor(async () => (await ledger(gw, 'ticker')).runs.length === 1, 'the first run in the ledger');
      const first = await ledger(gw, 'ticker');
      expect(first).to.deep.include({ concurrency_policy: 'forbid', starting_deadline_seconds: 90 });
      expect(first.schedule).to.deep.equal({ cron: '* * * * *', timezone: 'UTC', enabled: true });
      expect(first.next_runs).to.deep.equal(['10:02', '10:03', '10:04', '10:05', '10:06'].map((t) => `2030-01-01T${t}:00.000Z`));
      const run = first.runs[0];
      expect(run).to.deep.include({ planned_at: '2030-01-01T10:01:00.000Z', manual: false, outcome: 'ran', missed_reason: null, status_code: 200, started_at: '2030-01-01T10:01:00.000Z', lag_ms: 0 });
      const logs = await gw.logs('ticker');
      expect(logs.logs[0]).to.deep.include({ id: run.log_id, trigger: 'schedule', status_code: 200, execution_time_ms: run.execution_time_ms });
      expect(logs.logs[0]).to.not.have.property('manual');

      clock.advance(10_000); // 10:01:10
      const manual = await gw.api('POST', '/api/v1/functions/ticker/schedule/run');
      expect(manual.status, JSON.stringify(manual.body)).to.equal(200);
      // The same request a scheduled run sends.
      expect(manual.body).to.deep.include({ status_code: 200, trigger: 'schedule', manual: true, body: { trigger: 'schedule', method: 'POST', body: {} } });
      const record = (await gw.logs('ticker')).logs.find((l: any) => l.id === manual.body.log_id);
      expect(record).to.deep.include({ trigger: 'schedule', manual: true });
      expect(summary((await ledger(gw, 'ticker')).runs)).to.deep.equal(['10:01:10 ran manual lag=0', '10:01:00 ran lag=0']);
    });

    it('records a fire missed while the previous scheduled run is still going (forbid), and while the function is inactive', async () => {
      const gw = h!;
      // Both fires happen in one step of the test clock: the first run cannot have ended when the second is due.
      clock.advance(MIN); // 10:02:10: the 10:02 run starts
      clock.advance(MIN); // 10:03:10: the 10:03 run finds it going
      await waitFor(async () => (await ledger(gw, 'ticker')).runs.length === 4, 'the two runs in the ledger');
      expect(summary((await ledger(gw, 'ticker')).runs).slice(0, 2)).to.deep.equal(['10:03:00 missed previous_running', '10:02:00 ran lag=0']);
      expect((await gw.api('POST', '/api/v1/functions/ticker/deactivate')).status).to.equal(200);
      const refused = await gw.api('POST', '/api/v1/functions/ticker/schedule/run');
      expect(refused.status).to.equal(403);
      expect(refused.body.error).to.equal('function_inactive');
      expect((await ledger(gw, 'ticker')).next_runs).to.deep.equal([]);
      clock.advance(MIN); // 10:04:10
      await waitFor(async () => (await ledger(gw, 'ticker')).runs.length === 5, 'the inactive fire in the ledger');
      expect(summary((await ledger(gw, 'ticker')).runs)[0]).to.equal('10:04:00 missed function_inactive');
      expect((await gw.api('POST', '/api/v1/functions/ticker/activate')).status).to.equal(200);
    });

    it('a gateway stopped across planned times: at start the newest missed run starts late within the deadline, the earlier ones are recorded missed (platform_down)', async () => {
      await h!.close();
      h = undefined;
      clock.current = Date.parse('2030-01-01T10:07:20.000Z'); // 10:05, 10:06, 10:07 planned while down
      const gw = await start();
      await waitFor(async () => (await ledger(gw, 'ticker')).runs.length === 8, 'the missed and caught-up runs in the ledger');
      expect(summary((await ledger(gw, 'ticker')).runs).slice(0, 3)).to.deep.equal([
        '10:07:00 ran lag=20000',
        '10:06:00 missed platform_down',
        '10:05:00 missed platform_down',
      ]);
      const caughtUp = (await ledger(gw, 'ticker')).runs[0];
      expect((await gw.logs('ticker')).logs[0]).to.deep.include({ id: caughtUp.log_id, trigger: 'schedule', executed_at: '2030-01-01T10:07:20.000Z' });
    });

    it('past the deadline (here 30 s) nothing starts late: every missed run is recorded, at most 20 of a long outage; a restart with nothing missed adds nothing', async () => {
      await h!.close();
      h = undefined;
      clock.current = Date.parse('2030-01-01T10:42:35.000Z'); // 10:08 .. 10:42 planned while down; 10:42 is 35 s late
      const gw = await start({ FNHOST_SCHEDULE_STARTING_DEADLINE_SECONDS: '30' });
      await waitFor(async () => (await ledger(gw, 'ticker')).runs.length === 28, 'the missed runs in the ledger');
      const runs = summary((await ledger(gw, 'ticker', '?limit=21')).runs);
      expect(runs.slice(0, 20)).to.deep.equal(Array.from({ length: 20 }, (_, i) => `10:${String(42 - i).padStart(2, '0')}:00 missed platform_down`));
      expect(runs[20]).to.equal('10:07:00 ran lag=20000');
      await h!.close();
      h = undefined;
      const again = await start();
      expect((await ledger(again, 'ticker')).runs).to.have.length(28);
    });

    it('refuses clearly: an unknown function, a function without a schedule, a bad limit', async () => {
      const gw = h!;
      const unknown = await gw.api('GET', '/api/v1/functions/nope/schedule/runs');
      expect(unknown.status).to.equal(404);
      expect((await gw.api('POST', '/api/v1/functions/nope/schedule/run')).status).to.equal(404);
      await gw.createFunction('plain', HANDLER);
      const none = await gw.api('POST', '/api/v1/functions/plain/schedule/run');
      expect(none.status).to.equal(409);
      expect(none.body).to.deep.include({ error: 'schedule_not_set' });
      expect(none.body.message).to.match(/plain has no schedule/);
      const empty = await ledger(gw, 'plain');
      expect(empty).to.deep.include({ schedule: null, next_runs: [], runs: [] });
      const bad = await gw.api('GET', '/api/v1/functions/ticker/schedule/runs?limit=0');
      expect(bad.status).to.equal(400);
      expect(bad.body.message).to.match(/limit "0"/);
      expect((await gw.logs('plain')).pagination.totalCount).to.equal(0);
    });
  });
}

describeLedger('SQLite', undefined);

let mongo: MongoTestServer | undefined;
const database = `fnhost_ledger_${process.pid}_${Date.now()}`;
describeLedger(
  'MongoDB',
  () => () => openMongoStores({ url: mongo!.url, dbName: database }),
  async () => {
    mongo = await startMongoServer();
  },
  async () => {
    await mongo?.stop();
  },
);
