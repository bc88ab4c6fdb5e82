import { FnhostError, type FunctionRecord } from '@fnhost/core';
import type { RunRequest, RunResult } from '../invoke/exchange.ts';
import type { FunctionLookup, Invoker } from '../invoke/proxy.ts';
import type { ScheduleLedger } from './ledger.ts';

// What a scheduled run sends and how one is started: by the local scheduler
// at a planned time, or by hand (`function:schedule:run`, both modes). The
// record of either has trigger `schedule`; one fired by hand is marked
// `manual`. The ledger entry is written when the run's record is
// (Invoker's onScheduleRun), so a run the CronJob of cluster mode sends is
// entered the same way.

/** The request every scheduled run sends: `POST /` with the JSON body `{}`. */
export function scheduledRequest(): RunRequest {
  return { method: 'POST', path: '/', headers: { 'content-type': 'application/json', 'content-length': '2' }, body: Buffer.from('{}') };
}

/** A manual run of a function that has no schedule. */
export class ScheduleNotSetError extends FnhostError {
  constructor(name: string) {
    super('schedule_not_set', 409, `function ${name} has no schedule; set one with PUT /api/v1/functions/${name}/schedule (fnhost function:schedule:set) first`);
  }
}

export interface ScheduledRunDeps {
  functions: FunctionLookup;
  invoker: Pick<Invoker, 'run'>;
  ledger: ScheduleLedger;
}

/** The scheduler's fire: runs the function for the run planned at plannedAt, or records it missed when the function is inactive. */
export async function fireScheduled(deps: ScheduledRunDeps, functionId: string, plannedAt: number): Promise<void> {
  const fn = deps.functions.byId(functionId);
  if (fn === undefined) return;
  if (!fn.active) {
    deps.ledger.missed(fn, plannedAt, 'function_inactive');
    return;
  }
  await deps.invoker.run(fn, 'schedule', scheduledRequest(), { scheduled: { plannedAt } });
}

/**
 * Fires the schedule now, by hand: the request a scheduled run sends. A
 * function with no schedule is refused (409 schedule_not_set); a disabled
 * schedule still runs (its expression is kept); an inactive function is
 * refused as /invoke refuses it (403 function_inactive, no record).
 */
export function runScheduleNow(deps: Pick<ScheduledRunDeps, 'invoker'>, fn: FunctionRecord): Promise<RunResult> {
  if (fn.schedule === null) throw new ScheduleNotSetError(fn.name);
  return deps.invoker.run(fn, 'schedule', scheduledRequest(), { scheduled: { plannedAt: null } });
}

/**
 * At start (one machine), before the scheduler's timers are armed: for each
 * enabled schedule, records the runs planned while no gateway was running
 * and returns those to start late, within the starting deadline
 * (ScheduleLedger.catchUp). `now` is the instant the scheduler's own timers
 * count from, so no run is planned twice.
 */
export async function missedRunsAtStart(
  deps: { ledger: ScheduleLedger; logger: { error(msg: string, fields?: Record<string, unknown>): void } },
  functions: Iterable<FunctionRecord>,
  now: number,
): Promise<Array<{ functionId: string; plannedAt: number }>> {
  const late: Array<{ functionId: string; plannedAt: number }> = [];
  for (const fn of functions) {
    try {
      const plannedAt = await deps.ledger.catchUp(fn, now);
      if (plannedAt !== null) late.push({ functionId: fn.function_id, plannedAt });
    } catch (err) {
      deps.logger.error('catching up missed scheduled runs failed', { function_id: fn.function_id, error: (err as Error).message });
    }
  }
  return late;
}
