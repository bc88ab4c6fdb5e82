// Console output per execution (docs/internal-protocol.md "Console output"). The worker posts
// every console line of a call to this (main) thread, tagged with the call's execution id; this
// thread keeps each execution's lines, bounded, until its answer is sent and FNHOST_CONSOLE_GRACE_MS
// more have passed (output of deferred work: timers, promises the handler did not await), then
// hands them to the gateway in one POST /internal/v1/console with the runtime token. Kept here, not
// in the worker, so a call whose worker is ended (timeout, out of memory) keeps what it wrote.

/** Per execution, as the gateway stores at most (core/src/insight.ts). */
export const MAX_LINES = 1000;
export const MAX_BYTES = 64 * 1024;
export const MAX_LINE_CHARS = 8192;
/** Executions per POST (the gateway's MAX_CONSOLE_POST_EXECUTIONS). */
export const MAX_PER_POST = 32;
/** Executions kept open at once: beyond, the oldest is sent early (a flood of calls cannot grow this thread's memory without bound). */
export const MAX_OPEN = 512;

/** [at_ms, "o"|"e", text] */
export type WireLine = [number, 'o' | 'e', string];

export interface WireExecution {
  id: string;
  lines: WireLine[];
  dropped_lines: number;
  dropped_bytes: number;
}

interface Open extends WireExecution {
  startAt: number;
  bytes: number;
  /** When it is sent: set once its answer is out. */
  closeAt: number | undefined;
}

export interface CaptureOptions {
  graceMs: number;
  /** Sends one batch; a failure is logged by the caller and the batch dropped (the record stands without it). */
  send: (executions: WireExecution[]) => Promise<void>;
  /** ms since the epoch with fractions (performance.timeOrigin + performance.now() in both threads). */
  now: () => number;
}

export class ConsoleCapture {
  readonly #o: CaptureOptions;
  readonly #open = new Map<string, Open>();
  #timer: NodeJS.Timeout | undefined;
  #sending: Promise<void> = Promise.resolve();

  constructor(options: CaptureOptions) {
    this.#o = options;
  }

  /** A call with this execution id reached the runtime. */
  begin(id: string): void {
    if (this.#open.has(id)) return;
    if (this.#open.size >= MAX_OPEN) {
      const oldest = this.#open.keys().next().value!;
      this.#ship([this.#take(oldest)]);
    }
    this.#open.set(id, { id, lines: [], dropped_lines: 0, dropped_bytes: 0, startAt: this.#o.now(), bytes: 0, closeAt: undefined });
  }

  /** Text the call's console wrote (one write; may hold several lines). Unknown or closed ids are ignored. */
  write(id: string, stream: 'o' | 'e', at: number, text: string): void {
    const open = this.#open.get(id);
    if (open === undefined) return;
    const body = text.endsWith('\n') ? text.slice(0, -1) : text;
    const offset = Math.max(0, Math.round(at - open.startAt));
    for (const raw of body.split('\n')) {
      const line = raw.length > MAX_LINE_CHARS ? raw.slice(0, MAX_LINE_CHARS) : raw;
      const size = Buffer.byteLength(line);
      if (raw.length > MAX_LINE_CHARS) open.dropped_bytes += Buffer.byteLength(raw) - size;
      if (open.lines.length >= MAX_LINES || open.bytes + size > MAX_BYTES) {
        open.dropped_lines++;
        open.dropped_bytes += size;
        continue;
      }
      open.bytes += size;
      open.lines.push([offset, stream, line]);
    }
  }

  /** The call's answer is out (or its caller left): what it writes in the next graceMs is still its own. */
  answered(id: string): void {
    const open = this.#open.get(id);
    if (open === undefined || open.closeAt !== undefined) return;
    open.closeAt = this.#o.now() + this.#o.graceMs;
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#due(), Math.max(50, Math.min(250, this.#o.graceMs)));
      this.#timer.unref();
    }
  }

  /** Sends everything still held (runtime stopping), and waits for the sends under way. */
  async flushAll(): Promise<void> {
    const all = [...this.#open.keys()].map((id) => this.#take(id));
    this.#ship(all);
    await this.#sending;
  }

  #due(): void {
    const now = this.#o.now();
    const due: WireExecution[] = [];
    for (const [id, open] of this.#open) if (open.closeAt !== undefined && open.closeAt <= now) due.push(this.#take(id));
    this.#ship(due);
    if (this.#open.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #take(id: string): WireExecution {
    const open = this.#open.get(id)!;
    this.#open.delete(id);
    return { id, lines: open.lines, dropped_lines: open.dropped_lines, dropped_bytes: open.dropped_bytes };
  }

  #ship(all: WireExecution[]): void {
    // A call that wrote nothing is sent nothing: a record without output reads "none" already, and
    // most handlers write nothing, so a post per call would cost the gateway for no information.
    const executions = all.filter((e) => e.lines.length > 0 || e.dropped_lines > 0);
    for (let i = 0; i < executions.length; i += MAX_PER_POST) {
      const batch = executions.slice(i, i + MAX_PER_POST);
      // One post at a time, in order.
      this.#sending = this.#sending.then(() => this.#o.send(batch)).catch(() => undefined);
    }
  }
}

/** The longest pause a Retry-After can ask for (a wrong header must not silence a runtime for long). */
export const MAX_PAUSE_MS = 60_000;

/**
 * POSTs a batch to the gateway's internal API (node:http: this thread loads no fetch). A 429 (the
 * gateway's rate bound on console output) is not retried: that batch is dropped with one log line,
 * and so is every batch until its Retry-After has passed, counted and noted once sending resumes.
 */
export function consoleSender(gatewayUrl: string, token: string | undefined, onError: (err: Error) => void, now: () => number = Date.now): (executions: WireExecution[]) => Promise<void> {
  const { request } = process.getBuiltinModule('node:http');
  const target = gatewayUrl.startsWith('unix:') ? { socketPath: gatewayUrl.slice(5), base: '' } : (() => {
    const url = new URL(gatewayUrl);
    return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80), base: url.pathname.replace(/\/+$/, '') };
  })();
  let pausedUntil = 0;
  let droppedWhilePaused = 0;
  return (executions) => new Promise<void>((resolve) => {
    if (now() < pausedUntil) {
      droppedWhilePaused += executions.length;
      resolve();
      return;
    }
    if (droppedWhilePaused > 0) {
      onError(new Error(`the console output of ${droppedWhilePaused} more executions was dropped while the gateway's rate bound held`));
      droppedWhilePaused = 0;
    }
    const body = JSON.stringify({ executions });
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), host: 'gateway' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const { base, ...where } = target;
    const req = request({ ...where, path: `${base}/internal/v1/console`, method: 'POST', headers }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode === 429) {
          const seconds = Number(res.headers['retry-after']);
          const pauseMs = Math.min(MAX_PAUSE_MS, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000);
          pausedUntil = now() + pauseMs;
          onError(new Error(`the gateway refused console output at its rate bound (HTTP 429): the output of ${executions.length} executions was dropped, and console output is not sent for ${pauseMs / 1000} s`));
        } else if (res.statusCode !== 204) onError(new Error(`the gateway answered HTTP ${res.statusCode} to the console output of ${executions.length} executions`));
        resolve();
      });
      res.on('error', () => resolve());
    });
    req.on('error', (err) => {
      onError(err);
      resolve();
    });
    req.end(body);
  });
}
