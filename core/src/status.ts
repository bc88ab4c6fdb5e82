import type { Pagination, StatusFilter } from './model.ts';

// The spec's status classes. 1xx and 3xx are neither success nor error:
// `--status all` shows them, `success` and `error` do not.

export function isSuccess(statusCode: number): boolean {
  return statusCode >= 200 && statusCode < 300;
}

export function isError(statusCode: number): boolean {
  return statusCode >= 400;
}

export function matchesStatus(statusCode: number, filter: StatusFilter): boolean {
  if (filter === 'success') return isSuccess(statusCode);
  if (filter === 'error') return isError(statusCode);
  return true;
}

/**
 * The spec's pagination object for `totalCount` records in pages of `limit`.
 * Page 1 always exists, so 0 records give `Page 1 of 1 (0 total)`; a page past
 * the end is empty but carries the true totals (hasPrevPage true, hasNextPage false).
 */
export function paginate(totalCount: number, limit: number, page: number): Pagination {
  const totalPages = Math.max(1, Math.ceil(totalCount / limit));
  return {
    currentPage: page,
    totalPages,
    totalCount,
    hasNextPage: page < totalPages,
    hasPrevPage: page > 1,
  };
}
