import { expect } from 'chai';
import type { CounterStore, InsertResult, LogStore, StoredLog, WriterProgress } from '@fnhost/core';
import { LogWriter, expiresAt, type ProgressTracker, type WriterTimers } from '../../gateway/src/logs/writer.ts';

// A fake timer queue: the test decides when time passes.
class FakeTimers implements WriterTimers {
  now = 0;
  timers: Array<{ at: number; fn: () => void; id: number }> = [];
  #id = 0;
  setTimeout(fn: () => void, ms: number) {
    const id = ++this.#id;
    this.timers.push({ at: this.now + ms, fn, id });
    return id;
  }
  clearTimeout(handle: unknown) {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  async advance(ms: number) {
    this.now += ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= this.now).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((t) => t !== due);
      due.fn();
      await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setImmediate(r));
  }
}

class FakeLogs {
  batches: StoredLog[][] = [];
  progress: Array<WriterProgress | undefined> = [];
  failNext = 0;
  gate: Promise<void> | undefined;
  async insert(records: StoredLog[], progress?: WriterProgress) {
    this.progress.push(progress);
    if (this.gate) await this.gate;
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('disk full');
    }
    this.batches.push([...records]);
    return { instanceLive: true };
  }
}
class FakeCounters {
  totals = new Map<string, number>();
  async add(inc: ReadonlyMap<string, number>) {
    for (const [k, v] of inc) this.totals.set(k, (this.totals.get(k) ?? 0) + v);
  }
}

let n = 0;
const log = (fn = 'f1') => ({ id: `log_${++n}`, function_id: fn, status_code: 200, execution_time_ms: 1, error_message: null, executed_at: '2026-01-01T00:00:00.000Z', trigger: 'http' as const });

/** Records what the writer tells its tracker. */
class FakeTracker implements ProgressTracker {
  stored_: Array<{ result: InsertResult; progress: WriterProgress }> = [];
  progress(accepted: number, written: number): WriterProgress {
    return { instance: 'gw_test', accepted, written, at: 0 };
  }
  stored(result: InsertResult, progress: WriterProgress) {
    this.stored_.push({ result, progress });
  }
}

function make(opts: { batchSize?: number; maxQueue?: number; fullWaitMs?: number; maxRecordedChars?: number; tracker?: ProgressTracker } = {}) {
  const timers = new FakeTimers();
  const logs = new FakeLogs();
  const counters = new FakeCounters();
  const writer = new LogWriter({ logs: logs as unknown as LogStore, counters: counters as unknown as CounterStore, timers, intervalMs: 50, batchSize: opts.batchSize ?? 3, maxQueue: opts.maxQueue ?? 100, fullWaitMs: opts.fullWaitMs ?? 100, maxRecordedChars: opts.maxRecordedChars, tracker: opts.tracker });
  return { timers, logs, counters, writer };
}

describe('gateway log writer', () => {
  it('writes nothing until the interval passes, then one batch with counter increments', async () => {
    const { timers, logs, counters, writer } = make({ batchSize: 10 });
    writer.record(log(), { type: 'none' });
    writer.record(log('f2'), { type: 'none' });
    await timers.advance(49);
    expect(logs.batches).to.have.length(0);
    expect(writer.pendingCount('f1')).to.equal(1);
    await timers.advance(1);
    expect(logs.batches.map((b) => b.length)).to.deep.equal([2]);
    expect(Object.fromEntries(counters.totals)).to.deep.equal({ f1: 1, f2: 1 });
    expect(writer.depth).to.equal(0);
  });

  it('flushes at once when a batch is full and splits into batches', async () => {
    const { timers, logs, writer } = make({ batchSize: 3 });
    for (let i = 0; i < 7; i++) writer.record(log(), { type: 'none' });
    await timers.advance(0);
    await timers.advance(50);
    expect(logs.batches.map((b) => b.length)).to.deep.equal([3, 3, 1]);
  });

  it('keeps records when the store fails and writes them on retry', async () => {
    const { timers, logs, counters, writer } = make({ batchSize: 10 });
    logs.failNext = 1;
    writer.record(log(), { type: 'none' });
    await timers.advance(50);
    expect(logs.batches).to.have.length(0);
    expect(writer.failures).to.equal(1);
    expect(writer.depth).to.equal(1);
    await timers.advance(50);
    expect(logs.batches.map((b) => b.length)).to.deep.equal([1]);
    expect(counters.totals.get('f1')).to.equal(1);
  });

  it('applies back-pressure when full, then counts drops (never silent), still counting executions', async () => {
    const { timers, logs, counters, writer } = make({ batchSize: 100, maxQueue: 2, fullWaitMs: 100 });
    let release!: () => void;
    logs.gate = new Promise((r) => (release = r));
    writer.record(log(), { type: 'none' });
    writer.record(log(), { type: 'none' });
    const third = writer.record(log(), { type: 'none' });
    expect(third).to.be.instanceOf(Promise);
    await timers.advance(200);
    await third;
    expect(writer.dropped).to.equal(1);
    release();
    await writer.close();
    expect(logs.batches.flat()).to.have.length(2);
    expect(counters.totals.get('f1')).to.equal(3);
  });

  it('bounds the recorded bodies it holds: past the bound a record is queued with its exchange but without bodies, counted', async () => {
    const { timers, logs, writer } = make({ batchSize: 100, maxRecordedChars: 2500 });
    const body = (data: string) => ({ encoding: 'utf8' as const, data, size: data.length, truncated: false });
    const exchange = () => ({ request: { method: 'POST', path: '/p', query: '', headers: { 'x-a': '1' }, body: body('q'.repeat(500)) }, response: { status: 200, headers: {}, body: body('r'.repeat(500)) } });
    logs.failNext = 1; // the store fails once: the first records stay queued, holding their bodies
    writer.record({ ...log(), exchange: exchange() }, { type: 'none' });
    writer.record({ ...log(), exchange: exchange() }, { type: 'none' });
    await timers.advance(50);
    expect(writer.depth).to.equal(2);
    writer.record({ ...log(), exchange: exchange() }, { type: 'none' }); // 3,000 characters: over the bound
    expect(writer.recordedBodiesDropped).to.equal(1);
    await timers.advance(50);
    const written = logs.batches.flat();
    expect(written).to.have.length(3);
    expect(written.slice(0, 2).map((r) => r.exchange!.request.body!.data.length)).to.deep.equal([500, 500]);
    const cut = written[2]!.exchange!;
    expect(cut.request).to.deep.include({ method: 'POST', path: '/p', headers: { 'x-a': '1' } });
    expect(cut.request.body).to.deep.include({ data: '', size: 500 });
    expect(cut.request.body!.omitted).to.match(/log queue already held 2500 characters of recorded bodies/);
    expect(cut.response!.body!.omitted).to.be.a('string');
    // Written: their bodies no longer count, so the next record keeps its bodies.
    writer.record({ ...log(), exchange: exchange() }, { type: 'none' });
    await writer.close();
    expect(logs.batches.flat()[3]!.exchange!.request.body!.data).to.have.length(500);
    expect(writer.recordedBodiesDropped).to.equal(1);
  });

  it('close() flushes everything pending', async () => {
    const { logs, writer } = make({ batchSize: 2 });
    for (let i = 0; i < 5; i++) writer.record(log(), { type: 'none' });
    await writer.close();
    expect(logs.batches.flat()).to.have.length(5);
    expect(writer.depth).to.equal(0);
  });

  it('sends its progress with every batch: accepted so far, written once the batch is stored; a failed batch is resent with the same written target', async () => {
    const tracker = new FakeTracker();
    const { timers, logs, writer } = make({ batchSize: 3, tracker });
    for (let i = 0; i < 5; i++) writer.record(log(), { type: 'none' });
    expect(writer.accepted).to.equal(5);
    logs.failNext = 1;
    await timers.advance(0);
    expect(writer.failures).to.equal(1);
    writer.record(log(), { type: 'none' });
    await timers.advance(50);
    expect(logs.batches.map((b) => b.length)).to.deep.equal([3, 3]);
    expect(logs.progress.map((p) => p && [p.accepted, p.written])).to.deep.equal([[5, 3], [6, 3], [6, 6]]);
    expect(tracker.stored_.map((s) => s.progress.written), 'told only of stored batches').to.deep.equal([3, 6]);
    expect(writer.written).to.equal(6);
  });

  it('owes the records of executions still running: their progress counts them before their record is queued', async () => {
    const tracker = new FakeTracker();
    const { timers, logs, writer } = make({ batchSize: 10, tracker });
    writer.begin();
    writer.begin();
    writer.begin();
    writer.record(log(), { type: 'none' });
    expect([writer.accepted, writer.owed]).to.deep.equal([1, 3]);
    await timers.advance(50);
    expect(logs.progress.map((p) => p && [p.accepted, p.written])).to.deep.equal([[3, 1]]);
    writer.record(log(), { type: 'none' });
    writer.record(log(), { type: 'none' });
    expect(writer.owed, 'a record queued moves from running to queued').to.equal(3);
    writer.record(log(), { type: 'none' }); // a record without begin() (tests, direct use)
    expect(writer.owed).to.equal(4);
  });

  it('resends a failed batch unchanged, records and progress, even when more arrived meanwhile', async () => {
    const tracker = new FakeTracker();
    const { timers, logs, writer } = make({ batchSize: 10, tracker });
    writer.record(log(), { type: 'none' });
    writer.record(log(), { type: 'none' });
    logs.failNext = 1;
    await timers.advance(50);
    expect(writer.failures).to.equal(1);
    for (let i = 0; i < 3; i++) writer.record(log(), { type: 'none' });
    await timers.advance(50);
    expect(logs.batches.map((b) => b.length), 'the two again, then the three').to.deep.equal([2, 3]);
    expect(logs.progress.map((p) => p && p.written)).to.deep.equal([2, 2, 5]);
  });

  it('with a tracker, leaves the executions of the records it stores to the store (counted with their batch) and adds only the dropped ones', async () => {
    const tracker = new FakeTracker();
    const { timers, logs, counters, writer } = make({ batchSize: 100, maxQueue: 2, fullWaitMs: 100, tracker });
    let release!: () => void;
    logs.gate = new Promise((r) => (release = r));
    writer.record(log(), { type: 'none' });
    writer.record(log('f2'), { type: 'none' });
    expect([writer.pendingCount('f1'), writer.pendingCount('f2')], 'queued: not in the store yet').to.deep.equal([1, 1]);
    const third = writer.record(log(), { type: 'none' });
    await timers.advance(200);
    await third;
    expect(writer.dropped).to.equal(1);
    release();
    await writer.close();
    expect(logs.batches.flat()).to.have.length(2);
    expect(Object.fromEntries(counters.totals), 'the dropped one only').to.deep.equal({ f1: 1 });
    expect([writer.pendingCount('f1'), writer.pendingCount('f2')]).to.deep.equal([0, 0]);
  });

  it('with a tracker, a failed batch stays in pendingCount until it is stored', async () => {
    const tracker = new FakeTracker();
    const { timers, logs, counters, writer } = make({ batchSize: 10, tracker });
    logs.failNext = 1;
    writer.record(log(), { type: 'none' });
    writer.record(log(), { type: 'none' });
    await timers.advance(50);
    expect(writer.failures).to.equal(1);
    expect(writer.pendingCount('f1')).to.equal(2);
    await timers.advance(50);
    expect(logs.batches.flat()).to.have.length(2);
    expect(writer.pendingCount('f1')).to.equal(0);
    expect(counters.totals.size).to.equal(0);
  });

  it('sends no progress without a tracker', async () => {
    const { timers, logs, writer } = make();
    writer.record(log(), { type: 'none' });
    await timers.advance(50);
    expect(logs.progress).to.deep.equal([undefined]);
  });

  it('sets expires_at from time retention only', () => {
    expect(expiresAt({ type: 'time', days: 2 }, 1000)).to.equal(1000 + 2 * 86_400_000);
    expect(expiresAt({ type: 'count', count: 5 }, 1000)).to.equal(null);
    expect(expiresAt({ type: 'none' }, 1000)).to.equal(null);
  });
});
