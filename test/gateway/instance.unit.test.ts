import { expect } from 'chai';
import type { StoredLog, Stores } from '@fnhost/core';
import { openSqliteStores } from '@fnhost/core/store/sqlite/index.ts';
import { afterClaim, eraCounts, InstanceTracker, recoveredBy } from '../../gateway/src/logs/instance.ts';
import type { Logger } from '../../gateway/src/log.ts';
import { pollUntil } from '../helpers/wait.ts';

// Counting what a killed gateway lost (gateway/src/logs/instance.ts): the
// pure arithmetic, and trackers of "gateways" sharing one (in-memory SQLite)
// store on an injected clock, so that the bound passes without waiting.

const DEAD_AFTER = 30_000;

class Clock {
  t = Date.UTC(2100, 0, 1);
  now = () => this.t;
}

function collectingLogger(): Logger & { lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
  return {
    lines,
    info: (msg, fields) => lines.push({ level: 'info', msg, fields }),
    warn: (msg, fields) => lines.push({ level: 'warn', msg, fields }),
    error: (msg, fields) => lines.push({ level: 'error', msg, fields }),
  };
}

let serial = 0;
function records(n: number): StoredLog[] {
  return Array.from({ length: n }, () => ({
    id: `log_${++serial}`, function_id: 'f1', status_code: 200, execution_time_ms: 1, error_message: null,
    executed_at: '2100-01-01T00:00:00.000Z', trigger: 'http' as const, expires_at: null,
  }));
}

/** A stand-in for one gateway's log writer: counts, and batches stored with its tracker's progress. */
class Gateway {
  accepted = 0;
  written = 0;
  readonly logger = collectingLogger();
  readonly tracker: InstanceTracker;
  readonly stores: Stores;
  constructor(stores: Stores, clock: Clock, name: string) {
    this.stores = stores;
    let n = 0;
    this.tracker = new InstanceTracker({
      store: stores.instances, deadAfterMs: DEAD_AFTER, logger: this.logger, now: clock.now, timers: false,
      counts: () => ({ accepted: this.accepted, written: this.written }), newId: () => `${name}-${++n}`, host: 'host-' + name, pid: 100,
    });
  }
  accept(n: number) {
    this.accepted += n;
  }
  async flush(n: number) {
    const progress = this.tracker.progress(this.accepted, this.written + n);
    const result = await this.stores.logs.insert(records(n), progress);
    this.written += n;
    this.tracker.stored(result, progress);
  }
}

describe('dead gateway instances: the tracker', () => {
  describe('pure parts', () => {
    it('counts an instance id from its base on', () => {
      expect(eraCounts(0, 10, 7)).to.deep.equal({ accepted: 10, written: 7 });
      expect(eraCounts(100, 130, 90), 'records of the claimed instance still being written').to.deep.equal({ accepted: 30, written: 0 });
      expect(eraCounts(100, 130, 120)).to.deep.equal({ accepted: 30, written: 20 });
    });

    it('gives back what a claim counted lost as the writer writes it, never more', () => {
      const claim = { from: 60, to: 100 };
      expect(recoveredBy(claim, 50)).to.equal(0);
      expect(recoveredBy(claim, 60)).to.equal(0);
      expect(recoveredBy(claim, 75)).to.equal(15);
      expect(recoveredBy(claim, 100)).to.equal(40);
      expect(recoveredBy(claim, 250)).to.equal(40);
    });

    it('goes on after a claim from the last record the claim judged', () => {
      const ended = { at: 1, how: 'claimed' as const, by: 'b', lost: 40, recovered: 0 };
      const claimed = { id: 'a-1', host: 'h', pid: 1, startedAt: 0, heartbeatAt: 0, accepted: 100, written: 60, ended };
      expect(afterClaim(claimed, 0, 70)).to.deep.equal({ base: 100, owed: { id: 'a-1', from: 60, to: 100 } });
      expect(afterClaim(claimed, 1_000, 1_070), 'an instance id after an earlier claim').to.deep.equal({ base: 1_100, owed: { id: 'a-1', from: 1_060, to: 1_100 } });
      expect(afterClaim({ ...claimed, written: 100, ended: { ...ended, lost: 0 } }, 0, 100).owed, 'nothing counted lost').to.equal(null);
      expect(afterClaim(null, 0, 70), 'the instance document is gone').to.deep.equal({ base: 70, owed: null });
    });
  });

  describe('gateways sharing a store', () => {
    let stores: Stores;
    let clock: Clock;

    beforeEach(() => {
      stores = openSqliteStores({ path: ':memory:' });
      clock = new Clock();
    });
    afterEach(async () => {
      await stores.close();
    });

    it('counts what a killed gateway had accepted and not written, once the bound passed, once, with one warning', async () => {
      const a = new Gateway(stores, clock, 'a');
      await a.tracker.start();
      a.accept(10);
      await a.flush(6);
      a.accept(3); // accepted after its last batch: not in the store's evidence
      // a is killed here.
      const b = new Gateway(stores, clock, 'b');
      await b.tracker.start();
      clock.t += DEAD_AFTER;
      await b.tracker.scan();
      expect(b.tracker.totals, 'exactly the bound: not dead yet').to.deep.equal({ lost: 0, recovered: 0, dead: 0 });
      clock.t += 1;
      await b.tracker.beat(); // b stays alive meanwhile
      await b.tracker.scan();
      expect(b.tracker.totals).to.deep.equal({ lost: 4, recovered: 0, dead: 1 });
      const warnings = b.logger.lines.filter((l) => l.level === 'warn');
      expect(warnings).to.have.length(1);
      expect(warnings[0]!.msg).to.match(/found dead/);
      expect(warnings[0]!.fields).to.include({ instance: 'a-1', host: 'host-a', pid: 100, accepted: 10, written: 6, lost: 4 });

      // Another gateway, and b again: the dead instance is counted once.
      const c = new Gateway(stores, clock, 'c');
      await c.tracker.start();
      await Promise.all([b.tracker.scan(), c.tracker.scan()]);
      expect(c.tracker.totals).to.deep.equal({ lost: 4, recovered: 0, dead: 1 });
      expect(b.tracker.totals).to.deep.equal({ lost: 4, recovered: 0, dead: 1 });
      expect(c.logger.lines.filter((l) => l.level === 'warn')).to.have.length(0);
    });

    it('coalesces the executions that begin into one progress write per interval', async () => {
      let writes = 0;
      const inner = stores.instances;
      const counting: Stores['instances'] = Object.assign(Object.create(inner) as Stores['instances'], {
        heartbeat: (p: Parameters<Stores['instances']['heartbeat']>[0]) => (writes++, inner.heartbeat(p)),
      });
      let owed = 0;
      const tracker = new InstanceTracker({
        store: counting, deadAfterMs: 3_600_000, progressIntervalMs: 5, now: clock.now, newId: () => 'a-1',
        counts: () => ({ accepted: owed, written: 0 }),
      });
      await tracker.start();
      try {
        for (let i = 0; i < 1_000; i++) {
          owed++;
          tracker.touch();
        }
        await pollUntil('the progress written', async () => (await stores.instances.get('a-1'))?.accepted === 1_000, 2_000, 5);
        expect(writes).to.equal(1);
        owed += 5;
        tracker.touch();
        await pollUntil('the next progress written', async () => (await stores.instances.get('a-1'))?.accepted === 1_005, 2_000, 5);
        expect(writes).to.equal(2);
      } finally {
        await tracker.close();
      }
    });

    it('keeps an idle gateway alive by heartbeat and never claims itself', async () => {
      const a = new Gateway(stores, clock, 'a');
      const b = new Gateway(stores, clock, 'b');
      await a.tracker.start();
      await b.tracker.start();
      for (let i = 0; i < 10; i++) {
        clock.t += a.tracker.beatIntervalMs;
        await a.tracker.beat();
        await b.tracker.beat();
        await a.tracker.scan();
        await b.tracker.scan();
      }
      expect(clock.t - Date.UTC(2100, 0, 1)).to.be.greaterThan(DEAD_AFTER);
      expect(b.tracker.totals).to.deep.equal({ lost: 0, recovered: 0, dead: 0 });
      // a stops beating: b claims it, a (its heartbeat refused) would not claim b.
      clock.t += DEAD_AFTER + 1;
      await b.tracker.scan();
      expect(b.tracker.totals!.dead).to.equal(1);
    });

    it('a clean end removes the instance (nothing lost), or records what the shutdown could not write', async () => {
      const a = new Gateway(stores, clock, 'a');
      await a.tracker.start();
      a.accept(5);
      await a.flush(5);
      await a.tracker.close();
      expect(await stores.instances.get('a-1')).to.equal(null);

      const b = new Gateway(stores, clock, 'b');
      await b.tracker.start();
      b.accept(5);
      await b.flush(3);
      await b.tracker.close();
      expect((await stores.instances.get('b-1'))!.ended).to.include({ how: 'shutdown', lost: 2 });
      expect(b.logger.lines.some((l) => l.level === 'error' && /counted lost/.test(l.msg))).to.equal(true);

      const c = new Gateway(stores, clock, 'c');
      await c.tracker.start();
      clock.t += DEAD_AFTER + 1;
      await c.tracker.scan();
      expect(c.tracker.totals, 'neither is taken for dead afterwards').to.deep.equal({ lost: 2, recovered: 0, dead: 0 });
    });

    it('a progress write refused because the clean end removed the instance (it was in flight) starts no new instance', async () => {
      // The store answers the heartbeat only after the end went through, as a pool of connections may.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const slow = Object.create(stores.instances) as Stores['instances'];
      slow.heartbeat = async (progress) => {
        await gate;
        return stores.instances.heartbeat(progress);
      };
      const a = new Gateway({ ...stores, instances: slow }, clock, 'a');
      await a.tracker.start();
      a.accept(5);
      await a.flush(5);
      const tick = a.tracker.tick();
      await a.tracker.close();
      expect(await stores.instances.get('a-1'), 'ended cleanly').to.equal(null);
      release();
      await tick;
      expect(a.tracker.id).to.equal('a-1');
      expect(await stores.instances.get('a-2'), 'no instance left live after the end').to.equal(null);
    });

    it('a gateway taken for dead while alive goes on under a new id and gives back the records it writes after all', async () => {
      const a = new Gateway(stores, clock, 'a');
      const b = new Gateway(stores, clock, 'b');
      await a.tracker.start();
      await b.tracker.start();
      a.accept(100);
      await a.flush(60);
      // a cannot reach the store for longer than the bound (its queue of 40 waits), b can.
      clock.t += DEAD_AFTER + 1;
      await b.tracker.scan();
      expect(b.tracker.totals).to.deep.equal({ lost: 40, recovered: 0, dead: 1 });

      // a is back: its next batch is stored, but its instance is refused.
      a.accept(20);
      await a.flush(25);
      await a.tracker.beat();
      expect(a.tracker.id).to.equal('a-2');
      const warning = a.logger.lines.find((l) => l.level === 'warn' && /taken for dead/.test(l.msg));
      expect(warning?.fields).to.include({ instance: 'a-1', new_instance: 'a-2', claimed_by: 'b-1', counted_lost: 40 });
      expect(a.tracker.owed).to.deep.equal([{ id: 'a-1', from: 60, to: 100, reported: 25 }]);
      await b.tracker.scan();
      expect(b.tracker.totals).to.deep.equal({ lost: 40, recovered: 25, dead: 1 });

      // It writes the rest: all 40 back; the new instance holds only records after the 100th.
      await a.flush(35);
      clock.t += a.tracker.beatIntervalMs;
      await a.tracker.beat();
      expect(a.tracker.owed).to.deep.equal([]);
      expect(await stores.instances.get('a-2')).to.include({ accepted: 20, written: 20 });
      await b.tracker.scan();
      expect(b.tracker.totals).to.deep.equal({ lost: 40, recovered: 40, dead: 1 });

      // 7 more queued and carried by a heartbeat, then 2 more, then killed: the 7 count
      // (the 2 came after the last progress that reached the store: the uncounted window).
      a.accept(7);
      clock.t += a.tracker.beatIntervalMs;
      await a.tracker.beat();
      a.accept(2);
      clock.t += DEAD_AFTER + 1;
      await b.tracker.beat();
      await b.tracker.scan();
      expect(b.tracker.totals).to.deep.equal({ lost: 47, recovered: 40, dead: 2 });
    });
  });
});
