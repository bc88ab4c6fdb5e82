import { expect } from 'chai';
import { CLASS_ERROR, CLASS_OTHER, CLASS_SUCCESS, planPage, prefixUpperBound, statusClass } from '../../core/src/store/sqlite/index.ts';

// The SQLite store's pure helpers: where a page is read from, the prefix
// range of a KV listing, and the stored status class.

describe('SQLite store: planPage', () => {
  it('reads early pages from the newest end', () => {
    expect(planPage(100, 10, 1)).to.deep.equal({ fromNewest: true, skip: 0, take: 10 });
    expect(planPage(100, 10, 5)).to.deep.equal({ fromNewest: true, skip: 40, take: 10 });
  });

  it('reads pages past the middle from the oldest end', () => {
    expect(planPage(100, 10, 6)).to.deep.equal({ fromNewest: false, skip: 40, take: 10 });
    expect(planPage(100, 10, 10)).to.deep.equal({ fromNewest: false, skip: 0, take: 10 });
    expect(planPage(1_000_000, 50, 20_000)).to.deep.equal({ fromNewest: false, skip: 0, take: 50 });
  });

  it('takes only what is left on a partial last page', () => {
    expect(planPage(23, 5, 5)).to.deep.equal({ fromNewest: false, skip: 0, take: 3 });
    expect(planPage(1, 50, 1)).to.deep.equal({ fromNewest: true, skip: 0, take: 1 });
  });

  it('gives null past the end and for no records', () => {
    expect(planPage(20, 10, 3)).to.equal(null);
    expect(planPage(0, 50, 1)).to.equal(null);
  });

  it('never walks more than half the records', () => {
    for (const visible of [1, 2, 7, 50, 99, 100, 101]) {
      for (const limit of [1, 3, 10, 50]) {
        for (let page = 1; (page - 1) * limit < visible; page++) {
          const plan = planPage(visible, limit, page)!;
          expect(plan.skip, `${visible}/${limit}/${page}`).to.be.at.most(Math.floor(visible / 2));
          const newestOffset = plan.fromNewest ? plan.skip : visible - plan.skip - plan.take;
          expect(newestOffset).to.equal((page - 1) * limit);
          expect(plan.take).to.equal(Math.min(limit, visible - (page - 1) * limit));
        }
      }
    }
  });
});

describe('SQLite store: prefixUpperBound', () => {
  it('increments the last character', () => {
    expect(prefixUpperBound('user:')).to.equal('user;');
    expect(prefixUpperBound('a')).to.equal('b');
  });

  it('has no bound for the empty prefix or one of only U+10FFFF', () => {
    expect(prefixUpperBound('')).to.equal(null);
    expect(prefixUpperBound('\u{10FFFF}\u{10FFFF}')).to.equal(null);
  });

  it('drops trailing U+10FFFF and steps over the surrogate range', () => {
    expect(prefixUpperBound('a\u{10FFFF}')).to.equal('b');
    expect(prefixUpperBound('x\uD7FF')).to.equal('x\uE000');
    expect(prefixUpperBound('x\u{1F600}')).to.equal('x\u{1F601}');
  });

  it('is above every string with the prefix and below the next ones, in code point order', () => {
    const cmp = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b)); // UTF-8 bytes, as SQLite compares
    const upper = prefixUpperBound('ab')!;
    for (const inside of ['ab', 'ab\u0000', 'abz', 'ab\uFFFF', 'ab\u{10FFFF}x']) expect(cmp(inside, upper), inside).to.be.below(0);
    for (const outside of ['ac', 'b', 'ac\u0000']) expect(cmp(outside, upper), outside).to.be.at.least(0);
  });
});

describe('SQLite store: statusClass', () => {
  it('stores 2xx as success, 400+ as error, the rest as neither', () => {
    expect([100, 199, 200, 299, 300, 399, 400, 599].map(statusClass)).to.deep.equal([
      CLASS_OTHER, CLASS_OTHER, CLASS_SUCCESS, CLASS_SUCCESS, CLASS_OTHER, CLASS_OTHER, CLASS_ERROR, CLASS_ERROR,
    ]);
  });
});
