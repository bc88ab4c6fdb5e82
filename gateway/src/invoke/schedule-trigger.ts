import type { IncomingHttpHeaders } from 'node:http';
import { isPlannedTime, latestPlannedAtOrBefore, type FunctionRecord, type Trigger } from '@fnhost/core';
import { UnauthorizedError } from '../auth.ts';

// Cluster mode: what makes an /invoke call a scheduled run. The CronJob's
// job presents the schedule token (only scheduled triggers hold it) and the
// time its run was planned for (the CronJob names each Job after its
// scheduled minute; docs/operator.md), so the gateway enters the run in the
// ledger with its lag. On one machine no token is accepted: both headers are
// dropped like any caller-sent x-fnhost-* header.

export const SCHEDULE_TOKEN_HEADER = 'x-fnhost-schedule-token';
/** The planned time of a CronJob's run, ISO 8601 (honoured only with a valid schedule token). */
export const SCHEDULED_TIME_HEADER = 'x-fnhost-scheduled-time';

/** How far back the planned time of a run sent without (or with a wrong) planned time is looked for. */
const PLANNED_LOOKBACK_MS = 24 * 3_600_000;
/** A planned time later than the call's arrival by more than this (clock skew) is not believed. */
const MAX_EARLY_MS = 60_000;

export type ScheduleTrigger = { trigger: Trigger; plannedAt?: number };

/**
 * The trigger of an /invoke call: `http`, or `schedule` with its planned
 * time when the call carries a valid schedule token. A wrong token throws
 * UnauthorizedError. `check` is unset on one machine.
 */
export function scheduleTriggerOf(
  headers: IncomingHttpHeaders,
  fn: FunctionRecord,
  check: ((functionId: string, token: string) => boolean) | undefined,
  arrivedAt: number,
): ScheduleTrigger {
  const token = headers[SCHEDULE_TOKEN_HEADER];
  if (token === undefined || check === undefined) return { trigger: 'http' };
  if (typeof token !== 'string' || !check(fn.function_id, token)) throw new UnauthorizedError('the scheduled-trigger token is wrong');
  return { trigger: 'schedule', plannedAt: plannedTimeOf(headers[SCHEDULED_TIME_HEADER], fn, arrivedAt) };
}

/**
 * The planned time of a scheduled call: the one it names when that is a fire
 * time of the function's schedule and not in the future; else the newest
 * fire time before the call arrived; else (no schedule any more) its arrival.
 */
export function plannedTimeOf(header: string | string[] | undefined, fn: FunctionRecord, arrivedAt: number): number {
  const schedule = fn.schedule;
  if (schedule === null) return arrivedAt;
  if (typeof header === 'string' && header.length <= 40) {
    const named = Date.parse(header);
    if (Number.isFinite(named) && named <= arrivedAt + MAX_EARLY_MS && isPlannedTime(schedule.cron, schedule.timezone, named)) return named;
  }
  return latestPlannedAtOrBefore(schedule.cron, schedule.timezone, arrivedAt, PLANNED_LOOKBACK_MS) ?? arrivedAt;
}
