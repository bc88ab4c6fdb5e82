import { expect } from 'chai';
import { createElement as h } from 'react';
import { render } from 'ink-testing-library';
import { LogsPagerView } from '../../../cli/src/render/LogsPagerView.ts';
import { LogFollowView } from '../../../cli/src/render/LogFollowView.ts';
import { fn, log, page } from '../helpers/fixtures.ts';

describe('cli render: log views (ink-testing-library)', () => {
  const savedTz = process.env.TZ;
  before(() => {
    process.env.TZ = 'UTC';
  });
  after(() => {
    if (savedTz === undefined) delete process.env.TZ;
    else process.env.TZ = savedTz;
  });

  it('shows title, header, rows with markers, footer and the keys', () => {
    const logs = [log({ status_code: 500, error_message: 'TypeError: boom', execution_time_ms: 3 }), log({ status_code: 302 })];
    const { lastFrame, unmount } = render(
      h(LogsPagerView, { fn: fn(), status: 'all', page: page(logs, 120, 2, 1), width: 100, height: 40, offset: 0, selected: 0, loading: false, error: undefined, color: false }),
    );
    const frame = lastFrame()!;
    const lines = frame.split('\n');
    expect(lines[0]).to.equal('Execution logs for hello (5b0f1a1e-1111-4222-8333-944445555666); times in UTC');
    expect(lines[1]).to.match(/^Time\s+Status\s+Duration\s+Error/);
    expect(lines[2]).to.match(/✗ 500\s+3ms {2}TypeError: boom/);
    expect(lines[3]).to.match(/• 302\s+12ms {2}-/);
    expect(frame).to.contain('Page 1 of 60 (120 total)');
    expect(frame).to.contain('s status: all');
    expect(frame).to.contain('q quit');
    unmount();
  });

  it('shows the empty state, loading and an error', () => {
    const { lastFrame, unmount } = render(
      h(LogsPagerView, { fn: fn(), status: 'error', page: page([], 0), width: 100, height: 40, offset: 0, selected: 0, loading: true, error: 'cannot reach', color: false }),
    );
    expect(lastFrame()).to.contain('(no executions)');
    expect(lastFrame()).to.contain('Page 1 of 1 (0 total)');
    expect(lastFrame()).to.contain('loading…');
    expect(lastFrame()).to.contain('error: cannot reach');
    expect(lastFrame()).to.contain(', status error');
    unmount();
  });

  it('shows a window of rows when the page is taller than the screen', () => {
    const logs = Array.from({ length: 10 }, (_, i) => log({ status_code: 200 + i }));
    const props = { fn: fn(), status: 'all' as const, page: page(logs, 10, 10, 1), width: 100, height: 9, selected: 0, loading: false, error: undefined, color: false };
    const { lastFrame, rerender, unmount } = render(h(LogsPagerView, { ...props, offset: 0 }));
    let lines = lastFrame()!.split('\n');
    expect(lines).to.have.length(8);
    expect(lines[2]).to.match(/✓ 200/);
    expect(lines[5]).to.match(/✓ 203/);
    expect(lines[6]).to.equal('Page 1 of 1 (10 total) · rows 1–4 of 10');
    expect(lines[7]).to.contain('↑/↓ select · Enter open');
    rerender(h(LogsPagerView, { ...props, offset: 99 }));
    lines = lastFrame()!.split('\n');
    expect(lines[2]).to.match(/✓ 206/);
    expect(lines[6]).to.equal('Page 1 of 1 (10 total) · rows 7–10 of 10');
    unmount();
  });

  it('follow view: rows in <Static> plus a live status line', () => {
    const first = log({ status_code: 200 });
    const props = { fn: fn(), status: 'all' as const, width: 100, intervalMs: 2000, error: undefined, color: false };
    const { lastFrame, rerender, frames, unmount } = render(h(LogFollowView, { ...props, logs: [first] }));
    expect(lastFrame()).to.contain('following every 2s · 1 shown');
    rerender(h(LogFollowView, { ...props, logs: [first, log({ status_code: 404, error_message: 'nope' })] }));
    const all = frames.join('\n');
    expect(all).to.contain('Execution logs for hello');
    expect(all).to.match(/✗ 404\s+12ms {2}nope/);
    expect(lastFrame()).to.contain('2 shown');
    unmount();
  });
});
