import type { ExecutionLog, LogPage, StatusFilter } from '@fnhost/core/model.ts';

// --follow over a paged, newest-first API: the cursor is the set of log ids
// already shown. Each poll reads page 1 and keeps reading older pages while a
// whole page is new (a burst bigger than a page), up to a bound. Records are
// written in batches, so a record may land a little behind a newer one; the
// id set (rather than a timestamp watermark) still catches it.

export type LoadPage = (query: { status: StatusFilter; limit: number; page: number }) => Promise<LogPage>;

export const FOLLOW_PAGE_SIZE = 100;
const MAX_PAGES_PER_POLL = 10;
/** Ids remembered; far more than one poll can add, so old ones can be forgotten. */
const MAX_REMEMBERED = 20_000;

export class LogFollower {
  readonly #load: LoadPage;
  readonly #status: StatusFilter;
  readonly #seen = new Set<string>();

  constructor(load: LoadPage, status: StatusFilter) {
    this.#load = load;
    this.#status = status;
  }

  /** The newest `limit` records, oldest first; they become the starting cursor. */
  async start(limit: number): Promise<ExecutionLog[]> {
    // One read of at least a follow page: everything on it counts as seen, the newest `limit` are shown.
    const page = await this.#load({ status: this.#status, limit: Math.max(limit, FOLLOW_PAGE_SIZE), page: 1 });
    for (const log of page.logs) this.#remember(log.id);
    return chronological(page.logs.slice(0, limit));
  }

  /** Records not shown before, oldest first. */
  async poll(): Promise<ExecutionLog[]> {
    const fresh: ExecutionLog[] = [];
    for (let page = 1; page <= MAX_PAGES_PER_POLL; page++) {
      const result = await this.#load({ status: this.#status, limit: FOLLOW_PAGE_SIZE, page });
      const unseen = result.logs.filter((log) => !this.#seen.has(log.id));
      fresh.push(...unseen);
      if (unseen.length < result.logs.length || !result.pagination.hasNextPage) break;
    }
    for (const log of fresh) this.#remember(log.id);
    return chronological(fresh);
  }

  #remember(id: string): void {
    this.#seen.add(id);
    if (this.#seen.size > MAX_REMEMBERED) {
      const oldest = this.#seen.values().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
  }
}

export function chronological(logs: readonly ExecutionLog[]): ExecutionLog[] {
  // The API lists newest first; ties keep the API's order reversed.
  return logs
    .map((log, index) => ({ log, index }))
    .sort((a, b) => a.log.executed_at.localeCompare(b.log.executed_at) || b.index - a.index)
    .map(({ log }) => log);
}
