import Router from '@koa/router';
import { DEFAULT_STARTING_DEADLINE_SECONDS, MAX_LEDGER_PAGE, ValidationError, isoTimestamp, nextPlanned } from '@fnhost/core';
import type { FunctionService } from '../functions/service.ts';
import type { Invoker } from '../invoke/proxy.ts';
import type { ScheduleLedger } from '../scheduler/ledger.ts';
import { runScheduleNow } from '../scheduler/runs.ts';
import type { AccessControl } from '../access/control.ts';
import { authorizedFunction } from './functions.ts';
import { runResultBody } from './run-result.ts';

// /api/v1/functions/{ref}/schedule/runs: the ledger of a function's scheduled
// runs with the next planned ones; /schedule/run: fire the schedule now.

export interface ScheduleRunRoutesDeps {
  functions: FunctionService;
  invoker: Invoker;
  ledger: ScheduleLedger;
  now: () => number;
  access: AccessControl;
  /** One machine: how late a missed run may start (the local scheduler's); cluster mode: the CronJobs' (the same default). */
  startingDeadlineSeconds?: number;
}

const DEFAULT_PAGE = 50;
const NEXT_RUNS = 5;

function limitParam(raw: string | string[] | undefined): number {
  if (raw === undefined) return DEFAULT_PAGE;
  if (typeof raw !== 'string' || !/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_LEDGER_PAGE) {
    throw new ValidationError(`limit ${JSON.stringify(raw)} must be a whole number from 1 to ${MAX_LEDGER_PAGE}`);
  }
  return Number(raw);
}

export function scheduleRunRoutes(deps: ScheduleRunRoutesDeps): Router {
  const { functions, invoker, ledger, access } = deps;
  const router = new Router({ prefix: '/api/v1/functions' });

  // The ledger links records: reading it is reading the logs. Firing the schedule runs the function, as a test run does.
  router.get('/:ref/schedule/runs', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'get', 'logs');
    const limit = limitParam(ctx.query.limit);
    const now = deps.now();
    // Read your own writes: a run that ended before this request is listed.
    await ledger.flush();
    const runs = await ledger.list(fn.function_id, limit, now);
    const schedule = fn.schedule;
    const upcoming = schedule !== null && schedule.enabled && fn.active ? nextPlanned(schedule.cron, schedule.timezone, now, NEXT_RUNS) : [];
    ctx.body = {
      function_id: fn.function_id,
      schedule,
      // Every time in this answer is UTC; the schedule's fields are read in schedule.timezone.
      concurrency_policy: 'forbid',
      starting_deadline_seconds: deps.startingDeadlineSeconds ?? DEFAULT_STARTING_DEADLINE_SECONDS,
      next_runs: upcoming.map(isoTimestamp),
      runs,
    };
  });

  router.post('/:ref/schedule/run', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'create', 'test');
    const result = await runScheduleNow({ invoker }, fn);
    ctx.body = { ...runResultBody(result), trigger: 'schedule', manual: true };
  });

  return router;
}
