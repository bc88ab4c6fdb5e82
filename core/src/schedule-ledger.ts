import { CronExpressionParser } from 'cron-parser';
import { nextFireTime } from './cron.ts';
import type { RetentionPolicy } from './model.ts';

// The ledger of scheduled runs: for each planned run of a schedule, what
// happened (the record it produced, or `missed` and why), and the pure
// planning both modes share: which runs were planned between two instants,
// and what a gateway that was down does about those it missed (the
// startingDeadlineSeconds rule of Kubernetes' CronJob). Times are ms since
// epoch and passed in, so tests drive them.

/** Why a planned run did not happen. */
export type MissedReason =
  /** No gateway was running at the planned time (found at the next start). */
  | 'platform_down'
  /** The function was inactive at the planned time. */
  | 'function_inactive'
  /** The previous run of the schedule was still going (concurrency policy `forbid`). */
  | 'previous_running';

export const MISSED_REASONS: readonly MissedReason[] = ['platform_down', 'function_inactive', 'previous_running'];

/** One entry of the ledger, as the API shows it. */
export interface ScheduleRun {
  function_id: string;
  /**
   * ISO 8601 UTC: the time the schedule planned this run for. A manual run
   * (`function:schedule:run`) was planned for no time: its planned_at is when
   * it was fired.
   */
  planned_at: string;
  /** Fired by hand (`function:schedule:run`), not by the schedule. */
  manual: boolean;
  outcome: 'ran' | 'missed';
  /** Set when outcome is `missed`. */
  missed_reason: MissedReason | null;
  /** The execution record it produced (outcome `ran`). */
  log_id: string | null;
  status_code: number | null;
  execution_time_ms: number | null;
  /** ISO 8601 UTC: when the execution started. */
  started_at: string | null;
  /** started_at - planned_at in ms (0 for a manual run). */
  lag_ms: number | null;
}

/** How many ledger entries a function keeps at most; older ones are deleted as new ones come. */
export const SCHEDULE_LEDGER_KEEP = 500;
/** How many runs missed while the platform was down are recorded at a start (the newest). */
export const MAX_MISSED_RECORDED_AT_START = 20;
/** The default deadline for starting a missed run late (the operator's CronJob uses the same). */
export const DEFAULT_STARTING_DEADLINE_SECONDS = 300;
/** The page size bound of a ledger listing. */
export const MAX_LEDGER_PAGE = 200;

/** Whether `at` is a fire time of the schedule. */
export function isPlannedTime(cron: string, timezone: string, at: number): boolean {
  return Number.isFinite(at) && nextFireTime(cron, timezone, at - 1) === at;
}

/**
 * The planned times in (after, until], newest first, at most `max`. Walks
 * back from `until`, so a long outage under a frequent schedule costs `max`
 * steps, not one per missed minute.
 */
export function plannedBetween(cron: string, timezone: string, after: number, until: number, max: number): number[] {
  const out: number[] = [];
  if (until <= after || max <= 0) return out;
  // prev() is strictly before currentDate: start just after `until` so `until` itself counts.
  const expression = CronExpressionParser.parse(cron, { tz: timezone, currentDate: new Date(until + 1) });
  while (out.length < max) {
    let t: number;
    try {
      t = expression.prev().getTime();
    } catch {
      break; // no earlier fire time
    }
    if (t <= after) break;
    out.push(t);
  }
  return out;
}

/** The newest planned time at or before `at`, if any within `lookBackMs`. */
export function latestPlannedAtOrBefore(cron: string, timezone: string, at: number, lookBackMs: number): number | undefined {
  return plannedBetween(cron, timezone, at - lookBackMs, at, 1)[0];
}

/** The next `count` planned times strictly after `after`, oldest first. */
export function nextPlanned(cron: string, timezone: string, after: number, count: number): number[] {
  const out: number[] = [];
  let t = after;
  for (let i = 0; i < count; i++) {
    try {
      t = nextFireTime(cron, timezone, t);
    } catch {
      break;
    }
    out.push(t);
  }
  return out;
}

export interface CatchUpInput {
  cron: string;
  timezone: string;
  /** The newest planned time already accounted for (ledger), or when the schedule took effect. */
  since: number;
  now: number;
  startingDeadlineMs: number;
  /** The function is active now (it was, or was not, all the time the platform was down). */
  active: boolean;
  maxMissed?: number;
}

export interface CatchUpPlan {
  /** Planned times to record as missed, newest first, each with its reason. */
  missed: Array<{ plannedAt: number; reason: MissedReason }>;
  /** The planned time to run now, late: the newest missed one, when within the deadline. */
  runNow: number | null;
}

/**
 * What a gateway starting at `now` does about the runs planned while none
 * was running (CronJob's startingDeadlineSeconds): the newest of them runs
 * now if it is at most `startingDeadlineMs` late, every other one is
 * recorded missed (`platform_down`), at most `maxMissed` of them (the newest).
 * An inactive function runs none: its newest is recorded `function_inactive`.
 */
export function planCatchUp(input: CatchUpInput): CatchUpPlan {
  const maxMissed = input.maxMissed ?? MAX_MISSED_RECORDED_AT_START;
  const planned = plannedBetween(input.cron, input.timezone, input.since, input.now, maxMissed + 1);
  if (planned.length === 0) return { missed: [], runNow: null };
  const [newest, ...older] = planned as [number, ...number[]];
  const missed = older.map((plannedAt) => ({ plannedAt, reason: 'platform_down' as MissedReason }));
  let runNow: number | null = null;
  if (!input.active) missed.unshift({ plannedAt: newest, reason: 'function_inactive' });
  else if (input.now - newest <= input.startingDeadlineMs) runNow = newest;
  else missed.unshift({ plannedAt: newest, reason: 'platform_down' });
  return { missed: missed.slice(0, maxMissed), runNow };
}

/** When a ledger entry lets go under the function's retention policy (null: kept until the count bound drops it). */
export function ledgerExpiry(retention: RetentionPolicy, plannedAt: number): number | null {
  return retention.type === 'time' ? plannedAt + retention.days * 86_400_000 : null;
}
