import { expect } from 'chai';
import { NoopLogCleaner, StoreLogCleaner } from '../../operator/src/logcleaner.ts';

describe('operator log cleaners', () => {
  it('the store cleaner deletes the function logs and its counter, and lets a store failure through (the finalizer retries)', async () => {
    const calls: string[] = [];
    const cleaner = new StoreLogCleaner(
      { deleteFunction: async (id) => (calls.push(`logs:${id}`), 3) },
      { delete: async (id) => void calls.push(`counter:${id}`) },
    );
    await cleaner.deleteFunctionLogs('f-1', { namespace: 'a', name: 'b' });
    expect(calls).to.deep.equal(['logs:f-1', 'counter:f-1']);
    calls.length = 0;
    const withAsync = new StoreLogCleaner(
      { deleteFunction: async (id) => (calls.push(`logs:${id}`), 0) },
      { delete: async (id) => void calls.push(`counter:${id}`) },
      { deleteFunction: async (id) => (calls.push(`runs:${id}`), 0) },
      { deleteFunction: async (id) => (calls.push(`async:${id}`), 2) },
    );
    await withAsync.deleteFunctionLogs('f-3', { namespace: 'a', name: 'b' });
    expect(calls).to.deep.equal(['logs:f-3', 'counter:f-3', 'runs:f-3', 'async:f-3']);
    const failing = new StoreLogCleaner({ deleteFunction: async () => { throw new Error('store down'); } }, { delete: async () => {} });
    let error: unknown;
    await failing.deleteFunctionLogs('f-2', { namespace: 'a', name: 'b' }).catch((e) => (error = e));
    expect((error as Error).message).to.equal('store down');
  });

  it('the default cleaner does nothing and says so by name', async () => {
    const noop = new NoopLogCleaner();
    expect(noop.name).to.equal('noop');
    expect(await noop.deleteFunctionLogs('f-1', { namespace: 'a', name: 'b' })).to.equal(undefined);
  });
});
