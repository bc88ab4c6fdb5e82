import type Router from '@koa/router';
import {
  MAX_CONSOLE_LINE_CHARS, MAX_CONSOLE_LINES, ValidationError, boundConsole,
  type ConsoleLine, type ConsoleOutput, type FunctionRecord, type InsightStore,
} from '@fnhost/core';
import { readJson } from '../api/body.ts';
import { ConsoleRateError, MAX_CONSOLE_POST_BYTES, type ConsoleRate, type ExecutionIds } from './console-rate.ts';

// POST /internal/v1/console: a runtime hands over the console output of its
// executions (docs/internal-protocol.md "Console output"), once each
// execution's answer and deferred work had their time. The token names the
// function, so output lands only on that function's records; each execution's
// output is stored once (a second post for the same id keeps the first) and
// bounded again here, whatever the sender claims.

/** Executions per post, and the post's size: 32 executions at their bound, with JSON's overhead. */
export const MAX_CONSOLE_POST_EXECUTIONS = 32;
export { MAX_CONSOLE_POST_BYTES } from './console-rate.ts';
/** A refused post up to this size is read and dropped rather than cut off. */
const DRAIN_REFUSED_BYTES = 64 * 1024;
const LOG_ID = /^log_[A-Za-z0-9_-]{1,64}$/;
const DAY_MS = 86_400_000;

export interface ConsoleRouteDeps {
  insight: InsightStore;
  functions: { byId(functionId: string): FunctionRecord | undefined };
  now: () => number;
  /** Writes the records this gateway has queued (output can arrive before its record is stored). */
  flushRecords: () => Promise<void>;
  /** false (FNHOST_CONSOLE_CAPTURE=off): posts are read and dropped. */
  enabled: boolean;
  /** Bytes and posts per second per function (./console-rate.ts); unset: unbounded (unit tests). */
  rate?: ConsoleRate;
  /** The executions each function's output may name now (running, just ended); unset: any. */
  executions?: ExecutionIds;
  /**
   * Whether every execution of a function runs through this gateway (one machine): an id it does not
   * know then names no execution of the function, and the output is dropped with no store work. In
   * cluster mode another replica may have run it: stored with one write, never a flush.
   */
  allExecutionsHere?: boolean;
  /** A post refused at the rate bound (the metric and a rate-limited log line). */
  onRefused?: (functionId: string, err: ConsoleRateError) => void;
}

/** One execution as the runtime sends it: lines as [at_ms, "o"|"e", text]. */
export function parseConsolePost(raw: unknown): Array<{ id: string; output: ConsoleOutput }> {
  const executions = (raw as { executions?: unknown } | null)?.executions;
  if (!Array.isArray(executions)) throw new ValidationError('console post must be {"executions": [...]}');
  if (executions.length > MAX_CONSOLE_POST_EXECUTIONS) throw new ValidationError(`console post holds ${executions.length} executions; the limit is ${MAX_CONSOLE_POST_EXECUTIONS}`);
  return executions.map((e: unknown, i) => {
    const { id, lines, dropped_lines: droppedLines, dropped_bytes: droppedBytes } = (e ?? {}) as Record<string, unknown>;
    if (typeof id !== 'string' || !LOG_ID.test(id)) throw new ValidationError(`console post: executions[${i}].id ${JSON.stringify(id)?.slice(0, 80)} is not an execution id`);
    if (!Array.isArray(lines) || lines.length > MAX_CONSOLE_LINES) throw new ValidationError(`console post: executions[${i}].lines must be an array of at most ${MAX_CONSOLE_LINES} lines`);
    const parsed: ConsoleLine[] = lines.map((line: unknown, j) => {
      if (!Array.isArray(line) || typeof line[0] !== 'number' || (line[1] !== 'o' && line[1] !== 'e') || typeof line[2] !== 'string') {
        throw new ValidationError(`console post: executions[${i}].lines[${j}] must be [at_ms, "o"|"e", text]`);
      }
      return { at_ms: Math.max(0, Math.round(line[0])), stream: line[1] === 'o' ? 'stdout' : 'stderr', text: line[2].slice(0, MAX_CONSOLE_LINE_CHARS) };
    });
    const count = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);
    return { id, output: boundConsole({ lines: parsed, dropped_lines: count(droppedLines), dropped_bytes: count(droppedBytes) }) };
  });
}

export function addConsoleRoute(router: Router, deps: ConsoleRouteDeps): void {
  router.post('/console', async (ctx) => {
    const functionId = ctx.state.functionId as string;
    if (deps.rate !== undefined) {
      // Charged on the declared length before a byte of the body is read: a refusal costs no parsing.
      const declared = Number(ctx.get('content-length'));
      const bytes = Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, MAX_CONSOLE_POST_BYTES) : MAX_CONSOLE_POST_BYTES;
      try {
        deps.rate.charge(functionId, bytes, deps.now());
      } catch (err) {
        if (err instanceof ConsoleRateError) {
          deps.onRefused?.(functionId, err);
          // A large body is not read: the connection ends with the answer (its sender may see the
          // connection cut before it reads the 429). A small one is read and dropped, so the
          // connection stays and the sender reads the 429 with its Retry-After.
          if (bytes > DRAIN_REFUSED_BYTES) ctx.set('connection', 'close');
        }
        throw err;
      }
    }
    const executions = parseConsolePost(await readJson(ctx, MAX_CONSOLE_POST_BYTES));
    if (!deps.enabled) {
      ctx.status = 204;
      return;
    }
    const fn = deps.functions.byId(functionId);
    const now = deps.now();
    // Time retention as on the record (MongoDB's TTL index); other policies remove it with its record.
    const expiresAt = fn?.retention.type === 'time' ? now + fn.retention.days * DAY_MS : null;
    const outputs = executions.map(({ id, output }) => ({ logId: id, output }));
    const known = deps.executions === undefined ? outputs : outputs.filter((o) => deps.executions!.knows(functionId, o.logId, now));
    if (known.length > 0) {
      const stored = await deps.insight.putConsole(functionId, known, expiresAt, now);
      const missing = known.filter((_, i) => !stored[i]);
      if (missing.length > 0) {
        // No record yet: it is still in this gateway's queue (an execution this gateway ran).
        await deps.flushRecords();
        await deps.insight.putConsole(functionId, missing, expiresAt, now);
      }
    }
    if (known.length < outputs.length && deps.allExecutionsHere !== true) {
      // Cluster mode: another replica may have run these; one write, stored only beside a record of
      // this function (dropped otherwise), and never a flush of this gateway's queue for them.
      await deps.insight.putConsole(functionId, outputs.filter((o) => !known.includes(o)), expiresAt, now);
    }
    ctx.status = 204;
  });
}
