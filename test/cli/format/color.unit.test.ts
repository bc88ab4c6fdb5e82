import { expect } from 'chai';
import { colorEnabled } from '../../../cli/src/format/color.ts';

describe('cli format: colour decision', () => {
  it('colours a terminal, not a pipe', () => {
    expect(colorEnabled({ TERM: 'xterm-256color' }, true)).to.equal(true);
    expect(colorEnabled({ TERM: 'xterm-256color' }, false)).to.equal(false);
  });
  it('respects NO_COLOR, TERM=dumb and FORCE_COLOR', () => {
    expect(colorEnabled({ NO_COLOR: '1' }, true)).to.equal(false);
    expect(colorEnabled({ NO_COLOR: '' }, true)).to.equal(true);
    expect(colorEnabled({ TERM: 'dumb' }, true)).to.equal(false);
    expect(colorEnabled({ FORCE_COLOR: '1' }, false)).to.equal(true);
    expect(colorEnabled({ FORCE_COLOR: '0' }, true)).to.equal(false);
    expect(colorEnabled({ FORCE_COLOR: '1', NO_COLOR: '1' }, false)).to.equal(true);
  });
});
