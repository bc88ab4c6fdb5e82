import { expect } from 'chai';
import type { ExecutionLog, LogQuery } from '@fnhost/core/model.ts';
import { LogFollower } from '../../../cli/src/api/follow.ts';
import { log, page } from '../helpers/fixtures.ts';

// A fake log store: newest first, paged like the API.
function store() {
  const all: ExecutionLog[] = [];
  return {
    add(n: number) {
      for (let i = 0; i < n; i++) all.unshift(log());
    },
    load: async (q: LogQuery) => page(all.slice((q.page - 1) * q.limit, q.page * q.limit), all.length, q.limit, q.page),
  };
}

describe('cli api: --follow cursor', () => {
  it('starts with the newest records oldest first, then returns only new ones', async () => {
    const s = store();
    s.add(5);
    const follower = new LogFollower(s.load, 'all');
    const first = await follower.start(3);
    expect(first).to.have.length(3);
    expect(first[0]!.executed_at < first[2]!.executed_at).to.equal(true);
    expect(await follower.poll()).to.deep.equal([]);
    s.add(2);
    const fresh = await follower.poll();
    expect(fresh).to.have.length(2);
    expect(fresh[0]!.executed_at < fresh[1]!.executed_at).to.equal(true);
    expect(await follower.poll()).to.deep.equal([]);
  });

  it('reads further pages when more than a page arrived between polls', async () => {
    const s = store();
    const follower = new LogFollower(s.load, 'all');
    await follower.start(10);
    s.add(250);
    expect(await follower.poll()).to.have.length(250);
  });
});
