import { expect } from 'chai';
import { KubeApiError, splitLines, throttleDelayMs, type WatchEvent } from '../../../gateway/src/cluster/kube.ts';
import { Backoff, Reflector, STABLE_MS, classifyEvent, diffList, type Change } from '../../../gateway/src/cluster/reflector.ts';
import { FakeClock, MemoryLogger, settle } from './fakes.ts';

interface Obj {
  metadata: { name: string; namespace: string; resourceVersion: string };
  v?: number;
}
const obj = (name: string, rv: string, v = 0): Obj => ({ metadata: { name, namespace: 'ns', resourceVersion: rv }, v });

/** A scripted API: lists return `items`; each watch call is a deferred the test settles. */
class FakeApi {
  items: Obj[] = [];
  listRv = '100';
  lists = 0;
  listFailures = 0;
  watches: Array<{ rv: string; emit: (e: WatchEvent<Obj>) => void; end: () => void; fail: (err: unknown) => void; signal: AbortSignal }> = [];

  async list() {
    this.lists++;
    if (this.listFailures > 0) {
      this.listFailures--;
      throw new Error('connection refused');
    }
    return { items: this.items.map((o) => structuredClone(o)), resourceVersion: this.listRv };
  }

  watch(rv: string, onEvent: (e: WatchEvent<Obj>) => void, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      this.watches.push({
        rv,
        emit: (e) => {
          try {
            onEvent(e);
          } catch (err) {
            reject(err);
          }
        },
        end: resolve,
        fail: reject,
        signal,
      });
    });
  }

  get current() {
    return this.watches[this.watches.length - 1]!;
  }
}

function start(api: FakeApi, clock: FakeClock) {
  const changes: Array<Change<Obj>> = [];
  const delays: number[] = [];
  const reflector = new Reflector<Obj>({
    name: 'test',
    list: () => api.list(),
    watch: (rv, onEvent, signal) => api.watch(rv, onEvent, signal),
    onChange: (c) => changes.push(c),
    clock,
    logger: new MemoryLogger(),
    onRestart: (d) => delays.push(d),
  });
  reflector.start();
  return { reflector, changes, delays };
}

describe('cluster mode: list + watch (Reflector)', () => {
  it('pure parts: line splitting, 429 delays, backoff, list diff, event classes', () => {
    expect(splitLines('', '{"a":1}\n{"b"')).to.deep.equal({ lines: ['{"a":1}'], rest: '{"b"' });
    expect(splitLines('{"b"', ':2}\n\n')).to.deep.equal({ lines: ['{"b":2}'], rest: '' });
    expect(throttleDelayMs('3', 0)).to.equal(3000);
    expect(throttleDelayMs(null, 0)).to.equal(250);
    expect(throttleDelayMs(null, 20)).to.equal(30_000);
    const b = new Backoff(500, 30_000);
    expect([1, 2, 3, 4, 5, 6, 7, 8].map(() => b.next())).to.deep.equal([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    b.reset();
    expect(b.next()).to.equal(500);

    const held = new Map([['ns/a', obj('a', '1')], ['ns/b', obj('b', '2')]]);
    expect(diffList(held, [obj('a', '1'), obj('c', '5')], '9')).to.deep.equal([
      { key: 'ns/c', object: obj('c', '5') },
      { key: 'ns/b', object: undefined, resourceVersion: '9' },
    ]);
    expect(diffList(held, [obj('a', '3'), obj('b', '2')])).to.deep.equal([{ key: 'ns/a', object: obj('a', '3') }]);

    expect(classifyEvent({ type: 'DELETED', object: obj('a', '7') })).to.deep.equal({ kind: 'change', change: { key: 'ns/a', object: undefined, resourceVersion: '7' }, resourceVersion: '7' });
    expect(classifyEvent({ type: 'BOOKMARK', object: obj('', '8') })).to.deep.equal({ kind: 'bookmark', resourceVersion: '8' });
    expect(classifyEvent({ type: 'ERROR', object: { code: 410, message: 'too old' } as never })).to.deep.equal({ kind: 'expired' });
    expect(classifyEvent({ type: 'ERROR', object: { code: 500, message: 'boom' } as never })).to.deep.equal({ kind: 'error', message: 'boom' });
  });

  it('lists, then follows the watch from the list resourceVersion; a server-ended watch resumes without a new list', async () => {
    const clock = new FakeClock();
    const api = new FakeApi();
    api.items = [obj('a', '1')];
    const { reflector, changes } = start(api, clock);
    await reflector.synced;
    await settle();
    expect(changes).to.deep.equal([{ key: 'ns/a', object: obj('a', '1') }]);
    expect(api.current.rv).to.equal('100');
    api.current.emit({ type: 'MODIFIED', object: obj('a', '101', 1) });
    api.current.emit({ type: 'BOOKMARK', object: obj('', '150') });
    api.current.end();
    await clock.advance(0);
    expect(api.lists).to.equal(1);
    expect(api.watches).to.have.length(2);
    expect(api.current.rv, 'resumes from the bookmark').to.equal('150');
    expect(changes[1]).to.deep.equal({ key: 'ns/a', object: obj('a', '101', 1) });
    reflector.stop();
  });

  it('restarts a failed watch with capped doubling delays, lists again and diffs in what it missed (no dropped deletes)', async () => {
    const clock = new FakeClock();
    const api = new FakeApi();
    api.items = [obj('a', '1'), obj('b', '2')];
    const { reflector, changes, delays } = start(api, clock);
    await reflector.synced;
    await settle();
    changes.length = 0;
    // While disconnected: b deleted, a changed, c created.
    api.items = [obj('a', '5', 2), obj('c', '6')];
    api.listRv = '200';
    api.current.fail(new Error('socket hang up'));
    await settle();
    expect(delays).to.deep.equal([500]);
    await clock.advance(499);
    expect(api.lists, 'not before its delay').to.equal(1);
    await clock.advance(1);
    expect(api.lists).to.equal(2);
    expect(changes).to.deep.equal([
      { key: 'ns/a', object: obj('a', '5', 2) },
      { key: 'ns/c', object: obj('c', '6') },
      { key: 'ns/b', object: undefined, resourceVersion: '200' },
    ]);
    expect(api.current.rv).to.equal('200');
    // Repeated failures (including failed lists) double up to the cap.
    api.listFailures = 100;
    for (let i = 0; i < 9; i++) {
      if (i === 0) api.current.fail(new KubeApiError(500, 'InternalError', 'boom'));
      await settle();
      await clock.advance(delays[delays.length - 1]!);
    }
    expect(delays.slice(0, 9)).to.deep.equal([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    // The API comes back: the next restart lists and watches again; after a quiet minute the delay starts from the base.
    api.listFailures = 0;
    await clock.advance(30_000);
    expect(api.current.signal.aborted).to.equal(false);
    await clock.advance(STABLE_MS + 1);
    api.current.fail(new Error('reset'));
    await settle();
    expect(delays[delays.length - 1]).to.equal(500);
    reflector.stop();
    await clock.advance(60_000);
    const lists = api.lists;
    await clock.advance(60_000);
    expect(api.lists, 'stopped: no more restarts').to.equal(lists);
  });

  it('an expired resourceVersion (410) lists again at once', async () => {
    const clock = new FakeClock();
    const api = new FakeApi();
    const { reflector, delays } = start(api, clock);
    await reflector.synced;
    await settle();
    api.current.emit({ type: 'ERROR', object: { code: 410, message: 'too old resource version' } as never });
    await clock.advance(0);
    expect(api.lists).to.equal(2);
    expect(delays).to.deep.equal([]);
    reflector.stop();
  });
});
