import { expect } from 'chai';
import { createPainter } from '../../../cli/src/format/color.ts';
import {
  DEFAULT_WIDTH,
  emptyLine,
  footerLine,
  layoutFor,
  renderLogTable,
  statusCell,
  statusKind,
  titleLine,
  toRow,
} from '../../../cli/src/format/logs-table.ts';
import { formatLocalDateTime } from '../../../cli/src/format/time.ts';
import { truncate } from '../../../cli/src/format/text.ts';
import { fn, log, page } from '../helpers/fixtures.ts';

const plain = createPainter(false);

describe('cli format: log table', () => {
  let savedTz: string | undefined;
  beforeEach(() => {
    savedTz = process.env.TZ;
  });
  afterEach(() => {
    if (savedTz === undefined) delete process.env.TZ;
    else process.env.TZ = savedTz;
  });

  it('marks 2xx as success, 4xx/5xx as failure and 1xx/3xx as neutral', () => {
    expect(statusCell(200)).to.equal('✓ 200');
    expect(statusCell(204)).to.equal('✓ 204');
    expect(statusCell(404)).to.equal('✗ 404');
    expect(statusCell(500)).to.equal('✗ 500');
    expect(statusCell(302)).to.equal('• 302');
    expect(statusCell(101)).to.equal('• 101');
    expect(statusKind(399)).to.equal('neutral');
    expect(statusKind(400)).to.equal('error');
  });

  it('shows times in the local zone, honouring TZ', () => {
    process.env.TZ = 'UTC';
    expect(formatLocalDateTime('2026-11-22T14:03:07.123Z')).to.equal('2026-11-22 14:03:07');
    process.env.TZ = 'Asia/Tokyo';
    expect(formatLocalDateTime('2026-11-22T14:03:07.123Z')).to.equal('2026-11-22 23:03:07');
    process.env.TZ = 'America/New_York';
    expect(formatLocalDateTime('2026-11-22T14:03:07.123Z')).to.equal('2026-11-22 09:03:07');
  });

  it('fills exactly the width, cutting long errors with an ellipsis', () => {
    const long = 'TypeError: ' + 'x'.repeat(200);
    const layout = layoutFor([log({ status_code: 500, error_message: long })], DEFAULT_WIDTH);
    const row = toRow(log({ status_code: 500, error_message: long }), layout);
    expect(row.error.endsWith('…')).to.equal(true);
    expect(Array.from(row.error).length).to.equal(layout.error);
    const lines = renderLogTable(fn(), 'all', page([log({ status_code: 500, error_message: long })]), DEFAULT_WIDTH, plain);
    expect(Array.from(lines[2]!).length).to.equal(DEFAULT_WIDTH);
  });

  it('keeps short errors whole, shows - for none, and puts multi-line errors on one line', () => {
    const layout = layoutFor([], 120);
    expect(toRow(log({ error_message: null }), layout).error).to.equal('-');
    expect(toRow(log({ status_code: 500, error_message: 'boom' }), layout).error).to.equal('boom');
    expect(toRow(log({ status_code: 500, error_message: 'line one\n  at x\u001b[31m' }), layout).error).to.equal('line one at x[31m');
  });

  it('renders title, header, rows with durations, and the spec footer', () => {
    process.env.TZ = 'UTC';
    const logs = [log({ status_code: 500, execution_time_ms: 1234, error_message: 'boom', executed_at: '2026-11-22T14:03:07.000Z' })];
    const lines = renderLogTable(fn(), 'all', page(logs, 120, 50, 1), 80, plain);
    expect(lines[0]).to.equal('Execution logs for hello (5b0f1a1e-1111-4222-8333-944445555666); times in UTC');
    expect(lines[1]).to.match(/^Time\s+Status\s+Duration\s+Error$/);
    expect(lines[2]).to.match(/^2026-11-22 14:03:07  ✗ 500 +1234ms  boom$/);
    expect(lines.at(-1)).to.equal('Page 1 of 3 (120 total)');
  });

  it('says what the status filter is in the title', () => {
    expect(titleLine(fn(), 'error')).to.equal('Execution logs for hello (5b0f1a1e-1111-4222-8333-944445555666), status error; times in UTC');
    expect(titleLine(fn(), 'all', { following: true })).to.equal('Execution logs for hello (5b0f1a1e-1111-4222-8333-944445555666), following; times in UTC');
  });

  it('shows the pagination edges: no records, and a page past the end', () => {
    const none = page([], 0, 50, 1);
    expect(footerLine(none.pagination)).to.equal('Page 1 of 1 (0 total)');
    expect(emptyLine(none.pagination)).to.equal('(no executions)');
    const past = page([], 120, 50, 9);
    expect(footerLine(past.pagination)).to.equal('Page 9 of 3 (120 total)');
    expect(emptyLine(past.pagination)).to.equal('(no executions on page 9; the last page is 3)');
  });

  it('paints status markers only when colour is on', () => {
    const lines = renderLogTable(fn(), 'all', page([log({ status_code: 500, error_message: 'e' })]), 80, createPainter(true));
    expect(lines[2]).to.contain('\u001b[31m✗ 500\u001b[39m');
    expect(renderLogTable(fn(), 'all', page([log()]), 80, plain).join('\n')).not.to.contain('\u001b');
  });

  it('truncates by characters, never splitting a surrogate pair', () => {
    expect(truncate('abcdef', 4)).to.equal('abc…');
    expect(truncate('abc', 3)).to.equal('abc');
    expect(truncate('😀😀😀😀', 3)).to.equal('😀😀…');
  });
});
