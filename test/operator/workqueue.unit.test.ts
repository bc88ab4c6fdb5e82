import { expect } from 'chai';
import { WorkQueue } from '../../operator/src/workqueue.ts';
import { FakeClock } from './fixtures.ts';

async function drain(q: WorkQueue): Promise<string[]> {
  const keys: string[] = [];
  while (q.length > 0) {
    const k = (await q.get())!;
    keys.push(k);
    q.done(k);
  }
  return keys;
}

describe('operator work queue', () => {
  it('de-duplicates keys waiting in the queue and keeps first-in order', async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    q.add('ns/a');
    q.add('ns/b');
    q.add('ns/a');
    q.add('ns/a');
    expect(q.length).to.equal(2);
    expect(await drain(q)).to.deep.equal(['ns/a', 'ns/b']);
  });

  it('never hands a key to two workers; a key added while processing comes back after done()', async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    q.add('ns/a');
    const first = await q.get();
    expect(first).to.equal('ns/a');
    q.add('ns/a');
    q.add('ns/a');
    expect(q.length).to.equal(0);
    q.done('ns/a');
    expect(q.length).to.equal(1);
    expect(await q.get()).to.equal('ns/a');
    q.done('ns/a');
    expect(q.length).to.equal(0);
  });

  it('a waiting get() receives the next key added', async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    const pending = q.get();
    q.add('ns/x');
    expect(await pending).to.equal('ns/x');
  });

  it('rate-limited retries back off exponentially up to the cap, and forget() resets', () => {
    const q = new WorkQueue({ clock: new FakeClock(), baseDelayMs: 100, maxDelayMs: 1000 });
    expect([1, 2, 3, 4, 5, 6].map(() => q.when('ns/a'))).to.deep.equal([100, 200, 400, 800, 1000, 1000]);
    expect(q.when('ns/b')).to.equal(100);
    q.forget('ns/a');
    expect(q.when('ns/a')).to.equal(100);
  });

  it('addAfter delivers when the clock reaches the time, keeping only the earliest time per key', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ clock });
    q.addAfter('ns/a', 5000);
    q.addAfter('ns/a', 1000);
    q.addAfter('ns/a', 9000);
    q.addAfter('ns/b', 3000);
    clock.advance(999);
    expect(q.length).to.equal(0);
    clock.advance(1);
    expect(q.length).to.equal(1);
    expect(await q.get()).to.equal('ns/a');
    q.done('ns/a');
    clock.advance(2000);
    expect(await drain(q)).to.deep.equal(['ns/b']);
    clock.advance(10_000);
    expect(q.length).to.equal(0);
    expect(clock.pending).to.equal(0);
  });

  it('addRateLimited schedules the key after its backoff', () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ clock, baseDelayMs: 50 });
    expect(q.addRateLimited('ns/a')).to.equal(50);
    clock.advance(49);
    expect(q.length).to.equal(0);
    clock.advance(1);
    expect(q.length).to.equal(1);
    expect(q.numRequeues('ns/a')).to.equal(1);
  });

  it('shutDown releases waiting workers with undefined and drops delayed keys', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ clock });
    const waiting = q.get();
    q.addAfter('ns/a', 100);
    q.shutDown();
    expect(await waiting).to.equal(undefined);
    clock.advance(1000);
    expect(q.length).to.equal(0);
    q.add('ns/b');
    expect(q.length).to.equal(0);
  });
});
