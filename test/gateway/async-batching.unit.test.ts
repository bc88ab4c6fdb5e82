import { expect } from 'chai';
import type { AsyncCall, AsyncCallStore, AsyncCompletionWrite, FunctionRecord } from '@fnhost/core';
import { Batcher, BatchLengthError } from '../../gateway/src/async/batcher.ts';
import { AsyncDispatcher, claimPlan } from '../../gateway/src/async/dispatcher.ts';
import type { AsyncSettings } from '../../gateway/src/async/settings.ts';
import type { RunResult } from '../../gateway/src/invoke/exchange.ts';

// The dispatcher's batching (docs/async.md "Drain"): the group commit of
// attempt ends (batcher.ts, on a scheduler the test turns by hand), which
// functions a pass claims for (claimPlan, pure), and the dispatcher on a fake
// store and runner with a frozen clock: one claim fills the free slots, the
// attempts that end together are one completeMany, the bound is never passed.

/** A scheduler turned by hand: run() runs what was scheduled so far. */
class ManualSchedule {
  queue: Array<() => void> = [];
  readonly schedule = (fn: () => void) => {
    this.queue.push(fn);
  };
  run(): void {
    const q = this.queue;
    this.queue = [];
    for (const fn of q) fn();
  }
}

const settle = () => new Promise((r) => setImmediate(r));

async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('async batcher (group commit of attempt ends)', () => {
  it('writes the items added in one turn as one batch, answering each its own result in order', async () => {
    const s = new ManualSchedule();
    const writes: number[][] = [];
    const b = new Batcher<number, string>({ write: async (items) => (writes.push([...items]), items.map((i) => `r${i}`)), maxBatch: 10, schedule: s.schedule });
    const answers = [1, 2, 3].map((i) => b.add(i));
    expect(writes).to.deep.equal([]);
    expect(b.waiting).to.equal(3);
    s.run();
    expect(await Promise.all(answers)).to.deep.equal(['r1', 'r2', 'r3']);
    expect(writes).to.deep.equal([[1, 2, 3]]);
  });

  it('keeps one write under way: items added meanwhile wait and go together in the next one; a batch holds at most maxBatch', async () => {
    const s = new ManualSchedule();
    const writes: number[][] = [];
    let release!: () => void;
    const b = new Batcher<number, number>({
      write: (items) => {
        writes.push([...items]);
        return new Promise((r) => (release = () => r(items.map((i) => i * 10))));
      },
      maxBatch: 3,
      schedule: s.schedule,
    });
    const first = b.add(1);
    s.run();
    expect(writes).to.deep.equal([[1]]);
    const later = [2, 3, 4, 5].map((i) => b.add(i));
    s.run();
    expect(writes, 'no second write while the first is under way').to.deep.equal([[1]]);
    release();
    expect(await first).to.equal(10);
    await settle();
    s.run();
    expect(writes).to.deep.equal([[1], [2, 3, 4]]);
    release();
    await settle();
    s.run();
    expect(writes).to.deep.equal([[1], [2, 3, 4], [5]]);
    release();
    expect(await Promise.all(later)).to.deep.equal([20, 30, 40, 50]);
  });

  it('rejects every item of a failed write, and still writes the next batch', async () => {
    const s = new ManualSchedule();
    let fail = true;
    const b = new Batcher<number, number>({
      write: async (items) => {
        if (fail) throw new Error('store down');
        return [...items];
      },
      maxBatch: 10,
      schedule: s.schedule,
    });
    const lost = [b.add(1), b.add(2)].map((p) => p.catch((e: Error) => e.message));
    s.run();
    expect(await Promise.all(lost)).to.deep.equal(['store down', 'store down']);
    fail = false;
    const ok = b.add(3);
    await settle();
    s.run();
    expect(await ok).to.equal(3);
  });

  it('refuses a write that answers a different number of results, and a maxBatch below 1', async () => {
    const s = new ManualSchedule();
    const b = new Batcher<number, number>({ write: async () => [1], maxBatch: 10, schedule: s.schedule });
    const both = [b.add(1), b.add(2)].map((p) => p.catch((e: unknown) => e));
    s.run();
    for (const e of await Promise.all(both)) expect(e).to.be.instanceOf(BatchLengthError);
    expect(() => new Batcher({ write: async () => [], maxBatch: 0 })).to.throw(RangeError, /maxBatch 0/);
  });
});

function fnRecord(id: string, active = true): FunctionRecord {
  return { function_id: id, active, timeout_seconds: 5, retention: { type: 'count', max: 100 } } as unknown as FunctionRecord;
}

describe('async claim plan', () => {
  it('claims for the known active functions below their bound, up to it', () => {
    const fns = new Map([['a', fnRecord('a')], ['b', fnRecord('b')], ['c', fnRecord('c', false)], ['d', fnRecord('d')]]);
    const plan = claimPlan(['a', 'b', 'c', 'd', 'unknown'], (id) => fns.get(id), new Map([['a', 1], ['b', 4]]), 4);
    expect(plan.map((s) => [s.fn.function_id, s.max])).to.deep.equal([['a', 3], ['d', 4]]);
  });
});

/** An in-memory queue with the store's claim/complete semantics, counting its calls. */
class FakeQueue implements Partial<AsyncCallStore> {
  calls: AsyncCall[] = [];
  claims: number[] = [];
  batches: number[] = [];
  scans = 0;
  add(functionId: string, n: number): void {
    for (let i = 0; i < n; i++) {
      this.calls.push({
        id: `async_${functionId}_${this.calls.length}`, function_id: functionId, state: 'queued', accepted_at: 1000 + this.calls.length, attempt: 0, next_at: 0,
        lease_owner: null, lease_until: null, attempts: [], dead_reason: null, result: null, bytes: 10, idempotency_key: null, kept_until: null, finished_at: null,
        request: { method: 'POST', path: '/', headers: {}, body: null }, callback: null,
      });
    }
  }
  async dueFunctions(now: number): Promise<string[]> {
    this.scans++;
    return [...new Set(this.calls.filter((c) => c.state === 'queued' && c.next_at <= now).map((c) => c.function_id))];
  }
  async claim(functionId: string, owner: string, now: number, leaseUntil: number, max: number): Promise<AsyncCall[]> {
    this.claims.push(max);
    const got = this.calls.filter((c) => c.function_id === functionId && c.state === 'queued' && c.next_at <= now).slice(0, max);
    for (const c of got) Object.assign(c, { state: 'running', attempt: c.attempt + 1, lease_owner: owner, lease_until: leaseUntil });
    return got.map((c) => ({ ...c }));
  }
  async completeMany(writes: readonly AsyncCompletionWrite[]): Promise<boolean[]> {
    this.batches.push(writes.length);
    return writes.map((w) => {
      const c = this.calls.find((x) => x.id === w.id && x.state === 'running' && x.lease_owner === w.owner && x.attempt === w.attempt);
      if (c === undefined) return false;
      c.state = w.completion.state;
      c.lease_owner = null;
      return true;
    });
  }
  async reap(): Promise<number> {
    return 0;
  }
  async stats() {
    return { queued: 0, running: 0, dead: 0, oldestQueuedAt: null };
  }
}

/** A runner whose attempts end when the test says. */
class HeldRunner {
  held: Array<{ id: string; end(): void }> = [];
  running = 0;
  ran: string[] = [];
  readonly byFunction = new Map<string, number>();
  readonly maxByFunction = new Map<string, number>();
  run(fn: FunctionRecord, _trigger: 'async', _req: unknown, options: { async?: { id: string } }): Promise<RunResult> {
    const id = options.async!.id;
    const f = fn.function_id;
    this.ran.push(id);
    this.running++;
    this.byFunction.set(f, (this.byFunction.get(f) ?? 0) + 1);
    this.maxByFunction.set(f, Math.max(this.maxByFunction.get(f) ?? 0, this.byFunction.get(f)!));
    return new Promise((resolve) => {
      this.held.push({
        id,
        end: () => {
          this.running--;
          this.byFunction.set(f, this.byFunction.get(f)! - 1);
          resolve({ log_id: `log-${id}`, status_code: 200, execution_time_ms: 1, error_message: null, headers: {}, body: Buffer.alloc(0), truncated: false });
        },
      });
    });
  }
  endAll(): void {
    const h = this.held;
    this.held = [];
    for (const x of h) x.end();
  }
}

const SETTINGS: AsyncSettings = { functionBytes: 1e9, totalBytes: 1e9, idempotencyWindowMs: 1000, retryBaseMs: 1000, maxInFlightPerFunction: 4, leaseMarginMs: 1000, pollMs: 60_000, callbacks: { maxInFlight: 1, timeoutMs: 1000, retryBaseMs: 1000 }, recountMs: 60_000 };

describe('async dispatcher batching (fake store, frozen clock)', () => {
  let d: AsyncDispatcher | undefined;
  afterEach(async () => {
    await d?.stop(100);
    d = undefined;
  });

  function dispatcher(queue: FakeQueue, runner: HeldRunner, fns: Map<string, FunctionRecord>): AsyncDispatcher {
    const failures: unknown[] = [];
    d = new AsyncDispatcher({
      store: queue as unknown as AsyncCallStore, functions: { byId: (id) => fns.get(id) }, runner, settings: SETTINGS, owner: 'gw-1',
      now: () => 5000, random: () => 0.5, background: { failed: (_t, err) => failures.push(err) },
    });
    return d;
  }

  it('fills the free slots with one claim, records the attempts that end together in one write, and refills without a scan of the store', async () => {
    const queue = new FakeQueue();
    queue.add('f', 10);
    const runner = new HeldRunner();
    dispatcher(queue, runner, new Map([['f', fnRecord('f')]])).start();
    await until('four running', () => runner.running === 4);
    expect(queue.claims).to.deep.equal([4]);
    expect(queue.scans).to.equal(1);
    runner.endAll();
    await until('four more running', () => runner.running === 4 && runner.ran.length === 8);
    expect(queue.batches).to.deep.equal([4]);
    expect(queue.claims).to.deep.equal([4, 4]);
    expect(queue.scans, 'the refill claims for the function it was told of').to.equal(1);
    runner.endAll();
    await until('the last two running', () => runner.ran.length === 10);
    runner.endAll();
    await until('all succeeded', () => queue.calls.every((c) => c.state === 'succeeded'));
    expect(runner.ran, 'first attempts in acceptance order').to.deep.equal(queue.calls.map((c) => c.id));
    expect(queue.batches).to.deep.equal([4, 4, 2]);
  });

  it('a call accepted here is claimed for its function at once; never more than the bound of one function run at once', async () => {
    const queue = new FakeQueue();
    const runner = new HeldRunner();
    const fns = new Map([['f', fnRecord('f')], ['g', fnRecord('g')]]);
    const disp = dispatcher(queue, runner, fns);
    disp.start();
    await until('the first scan', () => queue.scans === 1);
    queue.add('f', 13);
    queue.add('g', 2);
    disp.wake('f');
    disp.wake('g');
    await until('f at its bound and g running', () => runner.running === 6);
    expect(queue.scans).to.equal(1);
    // End attempts a few at a time, in an order other than they started: the bound holds throughout.
    const deadline = Date.now() + 10_000;
    while (!queue.calls.every((c) => c.state === 'succeeded')) {
      if (Date.now() > deadline) throw new Error('the queue did not drain');
      for (const h of runner.held.splice(0, 3).reverse()) h.end();
      await new Promise((r) => setTimeout(r, 1));
    }
    expect(runner.maxByFunction.get('f')).to.equal(4);
    expect(runner.maxByFunction.get('g')).to.equal(2);
    expect(runner.ran.length).to.equal(15);
    expect(new Set(runner.ran).size).to.equal(15);
  });
});
