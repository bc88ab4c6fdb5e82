import type { Clock } from '@fnhost/core/clock.ts';
import type { NetworkPolicyChange, PolicyStore } from '@fnhost/core';
import { backoffMs, type BackgroundFailures } from '../background.ts';

// Policy changes written through another gateway replica (cluster mode: the replicas share the
// policies in MongoDB). Each replica's egress proxy closes the open tunnels a change now denies
// (EgressProxy.recheck), but a change written through replica A reaches replica B's proxy only if
// B hears of it: without this, a keep-alive tunnel open on B outlived a deny written through A
// for as long as the function kept using it. The follower reads the newest changes every interval
// and hands the scopes of those it has not seen to the same listeners a local write runs (this
// replica's own changes come back too: the second recheck finds nothing more to close).

/** How often a replica reads the change log: the longest a tunnel open on it outlives a denial written through another. */
export const POLICY_FOLLOW_INTERVAL_MS = 500;
/** Changes read each time; more new ones than this since the last read: every scope is rechecked. */
export const POLICY_FOLLOW_BATCH = 50;
/** After a failed read: the next one after 1 s, doubling to 10 s. */
const RETRY_BASE_MS = 1_000;
const RETRY_MAX_MS = 10_000;

/** What the follower reads of each change: PolicyStore.changeScopes. */
export type ChangeHead = Pick<NetworkPolicyChange, 'id' | 'scope'>;

export interface FollowStep {
  /** The ids of the changes read (newest first): what the next read compares against. */
  seen: string[];
  /** The scopes to recheck: ['global'] (every function's tunnels) when the read may have missed some. */
  scopes: string[];
}

/**
 * Which scopes changed since the last read. The first read (`previous` undefined) only sets the
 * baseline: what was written before this replica started concerns no tunnel it had open then.
 */
export function followStep(previous: readonly string[] | undefined, newestFirst: readonly ChangeHead[], batch = POLICY_FOLLOW_BATCH): FollowStep {
  const seen = newestFirst.map((c) => c.id);
  if (previous === undefined) return { seen, scopes: [] };
  const known = new Set(previous);
  const fresh = newestFirst.filter((c) => !known.has(c.id));
  if (fresh.length === 0) return { seen, scopes: [] };
  // A full batch of new changes: older ones may lie past it, unread.
  if (fresh.length >= batch && newestFirst.length >= batch) return { seen, scopes: ['global'] };
  const scopes = [...new Set(fresh.map((c) => c.scope))];
  return { seen, scopes: scopes.includes('global') ? ['global'] : scopes };
}

export interface PolicyFollowerOptions {
  store: Pick<PolicyStore, 'changeScopes'>;
  /** Runs the listeners of a change (PolicyCache.changed); awaited before the next read. */
  changed: (scope: string) => Promise<void>;
  clock: Clock;
  background: BackgroundFailures;
  intervalMs?: number;
  batch?: number;
}

export class PolicyFollower {
  readonly #o: PolicyFollowerOptions;
  #seen: string[] | undefined;
  #timer: unknown;
  #failures = 0;
  #closed = false;
  #running: Promise<void> = Promise.resolve();
  /** Scopes handed on so far. */
  followed = 0;

  constructor(options: PolicyFollowerOptions) {
    this.#o = options;
  }

  start(): void {
    this.#schedule(0);
  }

  /** One read, and the listeners of what it found (the timer's step; tests call it directly). */
  async poll(): Promise<string[]> {
    const newest = await this.#o.store.changeScopes(this.#o.batch ?? POLICY_FOLLOW_BATCH);
    const step = followStep(this.#seen, newest, this.#o.batch);
    for (const scope of step.scopes) await this.#o.changed(scope);
    this.#seen = step.seen;
    this.followed += step.scopes.length;
    return step.scopes;
  }

  #schedule(delayMs: number): void {
    if (this.#closed) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#running = this.poll().then(
        () => {
          this.#failures = 0;
          this.#schedule(this.#o.intervalMs ?? POLICY_FOLLOW_INTERVAL_MS);
        },
        (err: unknown) => {
          this.#failures++;
          this.#o.background.failed('policy_follow', err);
          this.#schedule(backoffMs(this.#failures, RETRY_BASE_MS, RETRY_MAX_MS));
        },
      );
    }, delayMs);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    await this.#running;
  }
}
