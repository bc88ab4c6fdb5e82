import { expect } from 'chai';
import { ValidationError } from '../../core/src/errors.ts';
import { MAX_CONSOLE_POST_EXECUTIONS, parseConsolePost } from '../../gateway/src/internal/console.ts';

// What the gateway accepts of a runtime's console post (gateway/src/internal/console.ts): the
// runtime's bounds are checked again, since handler code can reach the runtime's token.

describe('console post parsing', () => {
  it('turns wire lines into records\' lines and re-applies the bounds', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => [i, i % 2 ? 'e' : 'o', 'x'.repeat(100)]);
    const [one] = parseConsolePost({ executions: [{ id: 'log_abc', lines, dropped_lines: 7, dropped_bytes: 70 }] });
    expect(one!.id).to.equal('log_abc');
    expect(one!.output.lines[1]).to.deep.equal({ at_ms: 1, stream: 'stderr', text: 'x'.repeat(100) });
    // 655 lines of 100 bytes fit in 64 KiB; the rest counts as dropped.
    expect(one!.output.lines).to.have.length(655);
    expect(one!.output.dropped_lines).to.equal(7 + 345);
    expect(one!.output.dropped_bytes).to.equal(70 + 34_500);
  });

  it('refuses what is not a post, naming the bad part', () => {
    const bad: Array<[unknown, RegExp]> = [
      [{}, /"executions"/],
      [{ executions: Array.from({ length: MAX_CONSOLE_POST_EXECUTIONS + 1 }, () => ({ id: 'log_a', lines: [] })) }, /limit is 32/],
      [{ executions: [{ id: '../etc', lines: [] }] }, /executions\[0\]\.id/],
      [{ executions: [{ id: 'log_a', lines: [[0, 'x', 'text']] }] }, /lines\[0\]/],
      [{ executions: [{ id: 'log_a', lines: new Array(1001).fill([0, 'o', '']) }] }, /at most 1000/],
    ];
    for (const [body, message] of bad) expect(() => parseConsolePost(body), JSON.stringify(body).slice(0, 60)).to.throw(ValidationError, message);
  });
});
