import { expect } from 'chai';
import { isError, isSuccess, matchesStatus, paginate } from '../../core/src/status.ts';

describe('status classes', () => {
  it('success is exactly 200..299', () => {
    expect([199, 200, 204, 299, 300].map(isSuccess)).to.deep.equal([false, true, true, true, false]);
  });

  it('error is 400 and above, including the platform statuses above 599', () => {
    expect([399, 400, 404, 499, 500, 504, 599].map(isError)).to.deep.equal([false, true, true, true, true, true, true]);
  });

  it('1xx and 3xx are neither: only the all filter selects them', () => {
    for (const code of [100, 101, 103, 199, 300, 301, 302, 304, 307, 399]) {
      expect(matchesStatus(code, 'success'), `${code} success`).to.equal(false);
      expect(matchesStatus(code, 'error'), `${code} error`).to.equal(false);
      expect(matchesStatus(code, 'all'), `${code} all`).to.equal(true);
    }
  });

  it('the filters select their class', () => {
    expect(matchesStatus(201, 'success')).to.equal(true);
    expect(matchesStatus(201, 'error')).to.equal(false);
    expect(matchesStatus(500, 'error')).to.equal(true);
    expect(matchesStatus(500, 'success')).to.equal(false);
  });
});

describe('paginate', () => {
  it('gives page 1 of 1 for no records', () => {
    expect(paginate(0, 50, 1)).to.deep.equal({ currentPage: 1, totalPages: 1, totalCount: 0, hasNextPage: false, hasPrevPage: false });
  });

  it('gives whole pages for an exact multiple of the limit', () => {
    expect(paginate(100, 50, 2)).to.deep.equal({ currentPage: 2, totalPages: 2, totalCount: 100, hasNextPage: false, hasPrevPage: true });
    expect(paginate(100, 50, 1)).to.deep.equal({ currentPage: 1, totalPages: 2, totalCount: 100, hasNextPage: true, hasPrevPage: false });
  });

  it('rounds a partial last page up', () => {
    expect(paginate(101, 50, 3)).to.deep.equal({ currentPage: 3, totalPages: 3, totalCount: 101, hasNextPage: false, hasPrevPage: true });
  });

  it('keeps the true totals on a page past the end', () => {
    expect(paginate(7, 5, 9)).to.deep.equal({ currentPage: 9, totalPages: 2, totalCount: 7, hasNextPage: false, hasPrevPage: true });
  });

  it('with limit 1 has a page per record', () => {
    expect(paginate(3, 1, 2)).to.deep.equal({ currentPage: 2, totalPages: 3, totalCount: 3, hasNextPage: true, hasPrevPage: true });
  });
});
