import { expect } from 'chai';
import { createElement as h } from 'react';
import { Text } from 'ink';
import { render } from 'ink-testing-library';
import type { LogPage, LogQuery } from '@fnhost/core/model.ts';
import { nextStatus, useLogPager, type LogPager } from '../../../cli/src/hooks/useLogPager.ts';
import { page, log } from '../helpers/fixtures.ts';

async function until(condition: () => boolean, what: string, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('cli hooks: useLogPager', () => {
  it('cycles the status filter all → success → error → all', () => {
    expect(nextStatus('all')).to.equal('success');
    expect(nextStatus('success')).to.equal('error');
    expect(nextStatus('error')).to.equal('all');
  });

  it('pages forward and back within the bounds, and resets to page 1 on a filter change', async () => {
    const queries: LogQuery[] = [];
    const load = async (q: LogQuery): Promise<LogPage> => {
      queries.push(q);
      return page([log()], 3, 1, q.page);
    };
    let pager: LogPager | undefined;
    function Probe() {
      pager = useLogPager(load, { status: 'all', limit: 1, page: 1 }, page([log()], 3, 1, 1));
      return h(Text, null, `page ${pager.page.pagination.currentPage} ${pager.query.status}`);
    }
    const { lastFrame, unmount } = render(h(Probe));
    pager!.prevPage();
    expect(queries).to.have.length(0);
    pager!.nextPage();
    await until(() => lastFrame() === 'page 2 all', 'page 2');
    pager!.nextPage();
    await until(() => lastFrame() === 'page 3 all', 'page 3');
    pager!.nextPage();
    expect(queries).to.have.length(2);
    pager!.cycleStatus();
    await until(() => lastFrame() === 'page 1 success', 'filter success');
    expect(queries.at(-1)).to.deep.equal({ status: 'success', limit: 1, page: 1 });
    unmount();
  });

  it('keeps the page and shows the error when a load fails', async () => {
    let pager: LogPager | undefined;
    function Probe() {
      pager = useLogPager(async () => Promise.reject(new Error('server gone')), { status: 'all', limit: 1, page: 1 }, page([log()], 3, 1, 1));
      return h(Text, null, `page ${pager.page.pagination.currentPage} ${pager.error ?? ''}`);
    }
    const { lastFrame, unmount } = render(h(Probe));
    pager!.reload();
    await until(() => lastFrame() === 'page 1 server gone', 'the error');
    unmount();
  });

  it('from a page past the end, previous goes to the last page', async () => {
    const queries: LogQuery[] = [];
    let pager: LogPager | undefined;
    function Probe() {
      pager = useLogPager(async (q) => (queries.push(q), page([log()], 3, 1, q.page)), { status: 'all', limit: 1, page: 9 }, page([], 3, 1, 9));
      return h(Text, null, `page ${pager.page.pagination.currentPage}`);
    }
    const { lastFrame, unmount } = render(h(Probe));
    pager!.nextPage();
    expect(queries).to.have.length(0);
    pager!.prevPage();
    await until(() => lastFrame() === 'page 3', 'the last page');
    expect(queries[0]!.page).to.equal(3);
    unmount();
  });
});
