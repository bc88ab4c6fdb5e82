import { useCallback, useEffect, useRef, useState } from 'react';
import type { LogPage, LogQuery, StatusFilter } from '@fnhost/core/model.ts';

// The pager's data: the current query, the page on screen, and the actions the
// keys trigger. The loader is injected, so the hook does no I/O of its own and
// tests drive it with a fake. Answers to superseded requests are dropped.

export const STATUS_CYCLE: readonly StatusFilter[] = ['all', 'success', 'error'];

export function nextStatus(status: StatusFilter): StatusFilter {
  return STATUS_CYCLE[(STATUS_CYCLE.indexOf(status) + 1) % STATUS_CYCLE.length]!;
}

export interface LogPagerState {
  query: LogQuery;
  page: LogPage;
  loading: boolean;
  error: string | undefined;
}

export interface LogPager extends LogPagerState {
  nextPage(): void;
  prevPage(): void;
  cycleStatus(): void;
  reload(): void;
}

export function useLogPager(load: (query: LogQuery) => Promise<LogPage>, initialQuery: LogQuery, initialPage: LogPage): LogPager {
  const [state, setState] = useState<LogPagerState>({ query: initialQuery, page: initialPage, loading: false, error: undefined });
  const latest = useRef(0);
  const mounted = useRef(true);
  useEffect(() => () => void (mounted.current = false), []);

  const fetchPage = useCallback(
    (query: LogQuery) => {
      const request = ++latest.current;
      setState((s) => ({ ...s, query, loading: true, error: undefined }));
      load(query).then(
        (page) => {
          if (mounted.current && request === latest.current) setState({ query, page, loading: false, error: undefined });
        },
        (err: unknown) => {
          if (mounted.current && request === latest.current) {
            setState((s) => ({ ...s, loading: false, error: err instanceof Error ? err.message : String(err) }));
          }
        },
      );
    },
    [load],
  );

  const { query, page } = state;
  return {
    ...state,
    nextPage: () => {
      if (page.pagination.currentPage < page.pagination.totalPages) fetchPage({ ...query, page: page.pagination.currentPage + 1 });
    },
    prevPage: () => {
      // From a page past the end, "previous" goes to the last page that has records.
      const current = Math.min(page.pagination.currentPage, page.pagination.totalPages + 1);
      if (current > 1) fetchPage({ ...query, page: current - 1 });
    },
    cycleStatus: () => fetchPage({ ...query, status: nextStatus(query.status), page: 1 }),
    reload: () => fetchPage(query),
  };
}
