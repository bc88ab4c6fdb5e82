import type { IncomingMessage, ServerResponse } from 'node:http';
import { callableFunction } from './callable.ts';
import { performance } from 'node:perf_hooks';
import { pipeline, type Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import {
  limits,
  type ExecutionLog, type Executor, type FunctionRecord, type RecordedExchange, type RecycleReason, type Trigger, type Upstream,
} from '@fnhost/core';
import { UnauthorizedError } from '../auth.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { FunctionOutOfMemoryError, FunctionTimeoutError, STILL_LOADING, UnforwardableRequestError, isRefusedBeforeSending, recordText, runtimeEndedCall, writeError } from './errors.ts';
import { CAPTURE_LIMIT, collect, drainRequest, messageFrom500, readBody } from './bodies.ts';
import type { BodyLease } from './body-budget.ts';
import { admitBody, answerBodyFailure, type BodyBounds } from './body-refusal.ts';
import { decodeURIComponentSafe, headersToCaller, headersToFunction } from './headers.ts';
import { errorStackOf } from './error-stack.ts';
import type { Exchange, ExecutionPath, RunOptions, RunRequest, RunResult, ScheduledFor } from './exchange.ts';
import { scheduleTriggerOf } from './schedule-trigger.ts';
import { runOutsideHttp } from './run.ts';
import { RuntimeUnavailableError } from '../executor/errors.ts';
import { fastLogId } from './ids.ts';
import { InvalidResponseError, malformedAnswer, unreadableFraming } from './upstream-answer.ts';
import { UpstreamPools } from './upstream-pools.ts';
import { requestUpstream, type UpstreamResponse } from './upstream-request.ts';
import { executionRecord } from './execution-record.ts';
import { noteRequest, noteResponse, noteStreamedResponse, recordedExchange, startRecording } from './recording.ts';

// The invocation path. It asks the Executor for an upstream and sends HTTP to
// it over a keep-alive undici Pool (./upstream-pools.ts), so the same code serves local runtime
// processes and (later) Kubernetes pods. HTTP calls arrive here straight from
// node:http, not through Koa: this is the hot path, and Koa's context, router
// and middleware chain cost about a third of the throughput (bench/gateway.ts).
//
// Small upstream bodies (Content-Length known, ≤ BUFFER_LIMIT) are buffered
// and written in one go; large or chunked ones are streamed with
// stream.pipeline, which ends both sides when either aborts. Every execution
// — answered, failed, timed out, or abandoned by its caller — writes exactly
// one log record. Runs outside an HTTP call (schedule, test) go through the
// same send path from ./run.ts.

export const BUFFER_LIMIT = 64 * 1024;
/** How long after the function's own limit the gateway gives up on a runtime that cannot answer. */
export const TIMEOUT_GRACE_MS = 1000;
/** How often armed deadlines are checked. */
const DEADLINE_CHECK_MS = 100;
/**
 * How many times a call whose connection was refused is sent again. One
 * machine: the runtime died between calls and a new one starts. Cluster: each
 * refusing pod is passed over, so two retries cover a stopping pod and a second
 * one stopping in the same rollout; past them the caller gets 502.
 */
export const UNREACHED_RUNTIME_RETRIES = 2;

export interface FunctionLookup {
  /** The cached record (no store query), or undefined. */
  byId(functionId: string): FunctionRecord | undefined;
}

export interface ExecutionRecorder {
  /** An execution that will end in record() began (it reached the function, or runs as a schedule or test). */
  begin?(): void;
  /** `exchange`: the request and response, when the function records them (./recording.ts). */
  record(log: ExecutionLog & { exchange?: RecordedExchange }, retention: FunctionRecord['retention']): void | Promise<void>;
}

export interface Diagnoser {
  /** Why the runtime behind origin ended, waiting briefly for its exit. */
  diagnose?(functionId: string, waitMs: number): Promise<RecycleReason | undefined>;
}

export interface InvokerOptions {
  functions: FunctionLookup;
  executor: Executor & Diagnoser;
  recorder: ExecutionRecorder;
  metrics: Metrics;
  logger: Logger;
  trustProxy: boolean;
  connectionsPerOrigin?: number;
  /**
   * Cluster mode: checks the `x-fnhost-schedule-token` a CronJob's pod sends.
   * A valid token makes the call a scheduled run (trigger `schedule`); a wrong
   * one is refused with 401. Unset (one machine): the header is dropped like
   * any caller-sent `x-fnhost-*` header (./schedule-trigger.ts).
   */
  scheduleToken?: (functionId: string, token: string) => boolean;
  /** The budget and idle timeout of request bodies (./body-budget.ts); unset: bodies are bounded per request only. */
  bodies?: BodyBounds;
  /** The clock runs outside HTTP (schedule, test) take their start time from, so a scheduled run's lag is on the scheduler's clock (injected in tests); Date.now by default. */
  now?: () => number;
  /** Every recorded schedule run (the ledger, gateway/src/scheduler/ledger.ts); plannedAt null: fired by hand. */
  onScheduleRun?: (fn: FunctionRecord, log: ExecutionLog, plannedAt: number | null) => void;
  /** Told of every execution's begin and end (the console route's set of executions a post may name). */
  executions?: { began(functionId: string, logId: string): void; ended(functionId: string, logId: string): void };
}

export { SCHEDULE_TOKEN_HEADER } from './schedule-trigger.ts';

export class Invoker {
  readonly #o: InvokerOptions;
  readonly #upstreams: UpstreamPools;
  #inflight = 0;
  #idleWaiters: Array<() => void> = [];
  /** Calls with an armed deadline, checked by one coarse interval (cheaper than a timer per call). */
  readonly #armed = new Set<Exchange>();
  #sweeper: NodeJS.Timeout | undefined;

  /** What ./run.ts needs of the send path, without making it public on Invoker. */
  readonly #path: ExecutionPath = {
    begin: (fn, trigger, pinned) => {
      const ex = this.#begin(fn, trigger, performance.now(), this.#o.now?.() ?? Date.now());
      ex.pinned = pinned;
      this.#o.recorder.begin?.();
      return ex;
    },
    send: (ex, method, path, headers, body) => this.#send(ex, method, path, headers, body),
    finish: (ex, statusCode, errorMessage) => this.#finish(ex, statusCode, errorMessage, true),
  };

  constructor(options: InvokerOptions) {
    this.#o = options;
    this.#upstreams = new UpstreamPools(options.connectionsPerOrigin);
  }

  get inflight(): number {
    return this.#inflight;
  }

  /** Resolves when no execution is in flight, or after maxMs. */
  drain(maxMs: number): Promise<void> {
    if (this.#inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, maxMs);
      this.#idleWaiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** The origin's runtime is gone: close its pool. */
  originGone(origin: string): void {
    this.#upstreams.gone(origin);
  }

  async close(): Promise<void> {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    await this.#upstreams.close();
  }

  /** node:http entry for `/invoke/{functionId}[/{sub-path}]`. */
  handleHttp(req: IncomingMessage, res: ServerResponse): void {
    const startedAt = performance.now();
    const executedAt = Date.now();
    const url = req.url!;
    // '/invoke/'.length === 8
    let end = 8;
    while (end < url.length && url.charCodeAt(end) !== 47 /* / */ && url.charCodeAt(end) !== 63 /* ? */) end++;
    const functionId = url.slice(8, end);
    const rest = url.slice(end);
    const path = rest === '' ? '/' : rest.charCodeAt(0) === 63 ? '/' + rest : rest;
    const fn = callableFunction(this.#o.functions.byId(decodeURIComponentSafe(functionId)), functionId, req, res);
    if (fn === undefined) return;
    let scheduled: { trigger: Trigger; plannedAt?: number };
    try {
      scheduled = scheduleTriggerOf(req.headers, fn, this.#o.scheduleToken, executedAt);
    } catch (err) {
      drainRequest(req);
      writeError(res, err as UnauthorizedError, { 'www-authenticate': 'Bearer realm="fnhost"' });
      return;
    }
    const bodies = this.#o.bodies;
    const admitted = admitBody(req, res, bodies);
    if (admitted === undefined) return;
    const lease = admitted.lease;
    const ex = this.#begin(fn, scheduled.trigger, startedAt, executedAt);
    if (scheduled.plannedAt !== undefined) ex.scheduled = { plannedAt: scheduled.plannedAt };
    if (!admitted.hasBody) {
      this.#forward(ex, req, res, path, null, undefined);
      return;
    }
    readBody(req, limits.MAX_INVOKE_BODY_BYTES, { lease, idleTimeoutMs: bodies?.idleTimeoutMs }).then(
      (body) => this.#forward(ex, req, res, path, body, lease),
      (err: unknown) => {
        lease?.release();
        // A request refused before it reached the function is not an execution; one whose caller
        // went away while sending its body did not run either.
        this.#finish(ex, answerBodyFailure(req, res, err, bodies) ?? 499, null, false);
      },
    );
  }

  #begin(fn: FunctionRecord, trigger: Trigger, startedAt: number, executedAt: number): Exchange {
    this.#inflight++;
    this.#o.executor.callStarted?.(fn.function_id);
    const logId = fastLogId(executedAt);
    this.#o.executions?.began(fn.function_id, logId);
    return {
      fn, trigger, logId, startedAt, executedAt, deadline: 0, timedOut: false, origin: undefined, logged: false, errorStack: undefined, coldStart: false, waitMs: 0,
      recording: startRecording(fn), pinned: undefined, scheduled: undefined,
    };
  }

  #forward(ex: Exchange, req: IncomingMessage, res: ServerResponse, path: string, body: Buffer | null, lease: BodyLease | undefined): void {
    // From here on every path ends in a record (#finish with ran = true).
    this.#o.recorder.begin?.();
    if (ex.recording !== undefined) noteRequest(ex.recording, req.method!, path, req.headers, body);
    const headers = headersToFunction(req.headers, { remoteAddress: req.socket.remoteAddress ?? '', trustProxy: this.#o.trustProxy, executionId: ex.logId, trigger: ex.trigger });
    const sent = this.#send(ex, req.method!, path, headers, body);
    // The runtime has the body (or the call failed): its memory goes back to the budget.
    if (lease !== undefined) sent.then(() => lease.release(), () => lease.release());
    sent.then(
      (response) => this.#respond(ex, res, response),
      (err: unknown) => {
        const status = writeError(res, err);
        this.#finish(ex, status, (err as Error).message, true);
      },
    );
  }

  /** Sends one call to the function's runtime, with the gateway's own time limit armed. */
  async #send(ex: Exchange, method: string, path: string, headers: Record<string, string | string[]>, body: Buffer | null): Promise<UpstreamResponse> {
    const fn = ex.fn;
    ex.deadline = performance.now() + fn.timeout_seconds * 1000 + TIMEOUT_GRACE_MS;
    this.#armed.add(ex);
    if (this.#sweeper === undefined) {
      this.#sweeper = setInterval(() => this.#expireDue(), DEADLINE_CHECK_MS);
      this.#sweeper.unref();
    }
    for (let attempt = 0; ; attempt++) {
      let origin: string;
      let socketPath: string | undefined;
      const waitFrom = performance.now();
      try {
        let coldStart: boolean | undefined;
        // A started runtime answers at once (no promise); one starting or loading is waited for, bounded by the call's deadline.
        ({ origin, socketPath, coldStart } = ex.pinned ?? this.#o.executor.readyNow?.(ex.fn) ?? await this.#acquire(ex));
        if (coldStart === true) ex.coldStart = true;
      } catch (err) {
        throw ex.timedOut && !(err instanceof FunctionTimeoutError) ? new FunctionTimeoutError(fn.timeout_seconds) : err;
      } finally {
        ex.waitMs += performance.now() - waitFrom;
      }
      if (ex.timedOut) throw new FunctionTimeoutError(fn.timeout_seconds);
      ex.origin = origin;
      try {
        return await requestUpstream(this.#upstreams.get(origin, socketPath), { path, method: method as Dispatcher.HttpMethod, headers, body });
      } catch (err) {
        if (ex.timedOut) throw new FunctionTimeoutError(fn.timeout_seconds);
        // undici refused the request itself (a header it does not send): nothing reached the runtime, which is fine.
        if (isRefusedBeforeSending(err)) throw new UnforwardableRequestError((err as Error).message, { cause: err });
        // The runtime answered something unreadable: refuse this call, keep the runtime (./upstream-answer.ts).
        const malformed = malformedAnswer(err);
        if (malformed !== undefined) throw new InvalidResponseError(malformed, { cause: err });
        const code = (err as { code?: string }).code;
        // A throwaway version's runtime is the replay's own: nothing to retry on, and the serving one is not to be recycled.
        if (ex.pinned !== undefined) throw new RuntimeUnavailableError(`the throwaway version's runtime did not answer (${code ?? (err as Error).message})`, { cause: err });
        // Never reached the runtime (it died between calls, or its pod is stopping): send it again,
        // to a new runtime or another pod (the executor passes this one over), a bounded number of times.
        if (attempt < UNREACHED_RUNTIME_RETRIES && (code === 'ECONNREFUSED' || (socketPath !== undefined && code === 'ENOENT'))) {
          this.#o.executor.unreachable?.(fn, origin);
          this.#o.executor.recycle(fn.function_id, 'crash');
          this.originGone(origin);
          continue;
        }
        const reason = (await this.#o.executor.diagnose?.(fn.function_id, 300)) ?? 'crash';
        this.#o.executor.recycle(fn.function_id, reason);
        this.originGone(origin);
        if (reason === 'out_of_memory') throw new FunctionOutOfMemoryError(fn.memory_mib);
        throw new RuntimeUnavailableError(`the function's runtime did not answer (${code ?? (err as Error).message})`, { cause: err });
      }
    }
  }

  /**
   * The executor's upstream for the call, or a 504 at the call's deadline while it waits: the runtime
   * that is starting or loading its module is left to go on (a load longer than a short time limit
   * is no reason to end it; its start and its load have bounds of their own, docs/gateway.md).
   */
  #acquire(ex: Exchange): Promise<Upstream> {
    const acquired = this.#o.executor.acquire(ex.fn);
    return new Promise<Upstream>((resolve, reject) => {
      ex.expire = () => reject(new FunctionTimeoutError(ex.fn.timeout_seconds, STILL_LOADING));
      acquired.then(resolve, reject);
    }).finally(() => (ex.expire = undefined));
  }

  #expireDue(): void {
    if (this.#armed.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
      return;
    }
    const now = performance.now();
    for (const ex of this.#armed) {
      if (ex.deadline > now) continue;
      this.#armed.delete(ex);
      if (ex.expire !== undefined) {
        // Still waiting for its runtime to start or load: this call ends, the runtime goes on.
        ex.timedOut = true;
        this.#o.metrics.timeouts++;
        ex.expire();
        continue;
      }
      // The runtime ends a slow handler itself at the limit; reaching this means it cannot
      // answer at all. Recycling it and dropping its pool ends this call (and any other on it).
      ex.timedOut = true;
      this.#o.metrics.timeouts++;
      this.#o.executor.recycle(ex.fn.function_id, 'timeout');
      if (ex.origin !== undefined) this.originGone(ex.origin);
    }
  }

  #respond(ex: Exchange, res: ServerResponse, response: UpstreamResponse): void {
    const { statusCode, headers: upstream, body } = response;
    const errorHeader = upstream['x-fnhost-error'];
    let errorMessage = typeof errorHeader === 'string' ? decodeURIComponentSafe(errorHeader) : null;
    const kind = upstream['x-fnhost-error-kind'];
    ex.errorStack = errorStackOf(upstream);
    const ended = runtimeEndedCall(kind, statusCode, errorMessage, ex.fn);
    if (ended !== undefined) {
      // The runtime ended the call itself; the caller gets the platform's error body (docs/api-outline.md).
      body.dump().catch(() => undefined);
      const status = writeError(res, ended);
      if (kind === 'timeout') this.#o.metrics.timeouts++;
      this.#finish(ex, status, recordText(ended), true);
      return;
    }
    const unreadable = unreadableFraming(upstream);
    if (unreadable !== undefined) {
      // Only this connection to the runtime is dropped with the body.
      body.destroy();
      const refused = new InvalidResponseError(unreadable);
      this.#finish(ex, writeError(res, refused), refused.message, true);
      return;
    }
    const headers = headersToCaller(upstream);
    if (res.destroyed) {
      // The caller left before the function answered; the function still ran.
      this.#o.metrics.clientAborts++;
      body.dump().catch(() => undefined);
      this.#finish(ex, statusCode, errorMessage ?? 'client disconnected before the response was sent', true);
      return;
    }
    const length = upstream['content-length'];
    const small = typeof length === 'string' && Number(length) <= BUFFER_LIMIT;
    if (small && !(statusCode === 500 && errorMessage === null)) {
      // The common case: a small answer of known size, read in one go and written with one call.
      body.whole().then(
        (data) => this.#sendWhole(ex, res, statusCode, headers, data, errorMessage),
        (err: unknown) => this.#bodyFailed(ex, res, statusCode, err),
      );
      return;
    }
    const stream = body.stream();
    if (small || (statusCode === 500 && errorMessage === null)) {
      collect(stream, statusCode === 500 ? CAPTURE_LIMIT : BUFFER_LIMIT * 2).then(
        ({ data, complete }) => {
          if (statusCode === 500 && errorMessage === null) errorMessage = messageFrom500(data, upstream['content-type']);
          if (!complete) {
            // Bigger than it said, or an unlabelled 500 larger than we keep: stream what is left.
            res.writeHead(statusCode, headers);
            res.write(data);
            this.#stream(ex, res, stream, statusCode, errorMessage, headers, data);
            return;
          }
          this.#sendWhole(ex, res, statusCode, headers, data, errorMessage);
        },
        (err: unknown) => this.#bodyFailed(ex, res, statusCode, err),
      );
      return;
    }
    res.writeHead(statusCode, headers);
    this.#stream(ex, res, stream, statusCode, errorMessage, headers);
  }

  /** A whole (buffered) answer in one write, with its length; recorded when the client's side closes. */
  #sendWhole(ex: Exchange, res: ServerResponse, statusCode: number, headers: Record<string, string | string[]>, data: Buffer, errorMessage: string | null): void {
    if (res.destroyed) {
      this.#o.metrics.clientAborts++;
      this.#finish(ex, statusCode, errorMessage ?? 'client disconnected before the response was sent', true);
      return;
    }
    headers['content-length'] = String(data.length);
    if (ex.recording !== undefined) noteResponse(ex.recording, statusCode, headers, data);
    res.writeHead(statusCode, headers);
    res.end(data);
    res.once('close', () => this.#finish(ex, statusCode, res.writableFinished ? errorMessage : (errorMessage ?? 'client disconnected before the response ended'), true));
  }

  #stream(ex: Exchange, res: ServerResponse, body: Readable, statusCode: number, errorMessage: string | null, headers: Record<string, string | string[]>, head?: Buffer): void {
    // A recording sees the part already written (head) too: it starts the body.
    const noted = ex.recording === undefined ? undefined : noteStreamedResponse(ex.recording, statusCode, headers, body, head);
    pipeline(body, res, (err) => {
      noted?.();
      if (err === undefined || err === null) {
        this.#finish(ex, statusCode, errorMessage, true);
        return;
      }
      if (ex.timedOut) {
        this.#finish(ex, 504, new FunctionTimeoutError(ex.fn.timeout_seconds).message, true);
        return;
      }
      if (res.destroyed && !res.writableFinished && (err as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') {
        this.#o.metrics.clientAborts++;
        this.#finish(ex, statusCode, errorMessage ?? 'client disconnected before the response ended', true);
        return;
      }
      this.#finish(ex, statusCode >= 400 ? statusCode : 502, errorMessage ?? `the response stream broke: ${(err as Error).message}`, true);
    });
  }

  #bodyFailed(ex: Exchange, res: ServerResponse, statusCode: number, err: unknown): void {
    if (ex.timedOut) {
      const status = writeError(res, new FunctionTimeoutError(ex.fn.timeout_seconds));
      this.#finish(ex, status, new FunctionTimeoutError(ex.fn.timeout_seconds).message, true);
      return;
    }
    const failure = new RuntimeUnavailableError(`the function's response broke off: ${(err as Error).message}`);
    const status = writeError(res, failure);
    this.#finish(ex, statusCode >= 400 ? statusCode : status, failure.message, true);
  }

  /** Ends one execution: disarms its deadline and writes its one log record (when `ran`). */
  #finish(ex: Exchange, statusCode: number, errorMessage: string | null, ran: boolean): void {
    if (ex.logged) return;
    ex.logged = true;
    this.#armed.delete(ex);
    if (ran) {
      const ms = Math.max(0, Math.round(performance.now() - ex.startedAt));
      const log = executionRecord(ex, statusCode, errorMessage, ms);
      const exchange = recordedExchange(ex.recording);
      this.#o.metrics.observe(ex.trigger, statusCode, ms);
      if (ex.coldStart) this.#o.metrics.coldStarts++;
      const queued = this.#o.recorder.record(exchange === undefined ? log : { ...log, exchange }, ex.fn.retention);
      if (queued !== undefined) queued.catch((err: unknown) => this.#o.logger.error('recording an execution failed', { error: (err as Error).message }));
      if (ex.scheduled !== undefined) this.#o.onScheduleRun?.(ex.fn, log, ex.scheduled.plannedAt);
    }
    this.#o.executor.callEnded?.(ex.fn.function_id);
    this.#o.executions?.ended(ex.fn.function_id, ex.logId);
    if (--this.#inflight === 0 && this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /**
   * One execution outside of an HTTP call (schedule, test), through the same
   * send path and the same log record (./run.ts).
   */
  run(fn: FunctionRecord, trigger: Trigger, request: RunRequest, options: RunOptions = {}): Promise<RunResult> {
    return runOutsideHttp(this.#path, fn, trigger, request, options);
  }
}
