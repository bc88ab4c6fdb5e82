import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import {
  CALLBACK_MAX_ATTEMPTS, callbackBackoffMs, checkCallbackUrl, callbackDelivered, callbackErrorText,
  type AsyncCall, type AsyncCallback, type AsyncCallStore,
} from '@fnhost/core';
import type { BackgroundFailures } from '../background.ts';
import { checkTarget, type ListenerGuard } from '../egress/checked.ts';
import type { Policies } from '../egress/decision.ts';
import type { Refusals } from '../resources/refusals.ts';
import { callbackHeaders, storedCallbackPayload, type CallbackPayload } from './callback.ts';

// Delivery of async callbacks (docs/async.md "Callbacks"): the gateway that
// ended a call POSTs its final answer to the call's X-Callback-Url. Each try
// is decided as a function's own connection is (egress/checked.ts: the
// network policies, the protected ranges, the platform's listeners), then
// made to the very address that was checked (no second DNS answer), with no
// redirect followed, a time limit, and the receiver's answer read up to a
// bound and discarded. A 2xx delivers; anything else is tried again after a
// backoff, up to CALLBACK_MAX_ATTEMPTS; a refusal by the policies is final.
// How it went is written on the call (AsyncCall.callback) after every try.
// Callbacks in flight on one gateway are bounded: past the bound a callback
// is not sent, marked failed, counted (fnhost_refused_total) and logged.
// A pending callback is leased by the gateway delivering it (renewed at each
// try); one whose gateway died (its lease passed, or never taken) is taken
// over by any gateway's sender, which looks every pollMs, and delivered from
// the answer stored on the call.

/** The longest gap between two writes of a delivery (a backoff and a try), with a try's time again as margin. */
export function callbackLeaseMs(s: CallbackSettings): number {
  return 2 * s.timeoutMs + 2 * s.retryBaseMs;
}

export interface CallbackSettings {
  /** FNHOST_ASYNC_CALLBACKS_IN_FLIGHT: callbacks one gateway delivers at once (their tries and backoffs). */
  maxInFlight: number;
  /** FNHOST_ASYNC_CALLBACK_TIMEOUT_MS: one POST, from connecting to the receiver's status line. */
  timeoutMs: number;
  /** FNHOST_ASYNC_CALLBACK_RETRY_BASE_MS: the delay before the second try; doubled before the third. */
  retryBaseMs: number;
}

/** What is read of a receiver's answer before the connection is closed (and all of it discarded). */
export const CALLBACK_RESPONSE_READ_BYTES = 64 * 1024;

export interface CallbackSenderOptions {
  store: Pick<AsyncCallStore, 'setCallback' | 'claimCallbacks'>;
  settings: CallbackSettings;
  /** The policies the function's own connections are decided under (egress/decision.ts policiesFor). */
  policies(functionId: string): Promise<Policies>;
  /** The platform's listeners on this machine, as the egress proxy guards them. */
  listener(): ListenerGuard;
  /** The function's callback hosts now (FunctionRecord.async.callback_hosts): an owner who took a host off stops its callbacks. */
  callbackHosts(functionId: string): readonly string[] | undefined;
  /** A name's addresses (the system's resolver by default). */
  lookup?: (name: string) => Promise<string[]>;
  refusals?: Refusals;
  background: BackgroundFailures;
  now: () => number;
  random?: () => number;
  /** How often to look for callbacks a dead gateway left pending (FNHOST_ASYNC_POLL_MS). */
  pollMs?: number;
}

/** One try's outcome: delivered, or why not and whether another try could do better. */
export type TryOutcome = { delivered: true; status: number } | { delivered: false; status: number | null; error: string; final: boolean };

function systemLookup(): (name: string) => Promise<string[]> {
  const dns = process.getBuiltinModule('node:dns/promises');
  return async (name) => (await dns.lookup(name, { all: true, order: 'verbatim' })).map((a) => a.address);
}

/** `p`, or a rejection made by `error` after `ms`. */
function within<T>(p: Promise<T>, ms: number, error: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error()), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** A URL's host without IPv6 brackets or a trailing dot. */
function bareHost(url: URL): string {
  const h = url.hostname;
  return h.startsWith('[') ? h.slice(1, -1) : h.replace(/\.$/, '');
}

/**
 * POSTs `body` to `url` on `address` (already checked): no agent (no connection reused for
 * another address), no redirect followed (node:http follows none), at most `timeoutMs` to the
 * status line; the answer's body is read up to CALLBACK_RESPONSE_READ_BYTES and discarded.
 */
export function postOnce(url: URL, address: string, headers: Record<string, string | string[]>, body: Buffer, timeoutMs: number): Promise<TryOutcome> {
  return new Promise((resolve) => {
    const https = url.protocol === 'https:';
    const name = bareHost(url);
    let settled = false;
    const done = (o: TryOutcome) => {
      if (settled) return;
      settled = true;
      resolve(o);
    };
    const req = (https ? httpsRequest : httpRequest)({
      host: address,
      port: url.port === '' ? (https ? 443 : 80) : Number(url.port),
      method: 'POST',
      path: url.pathname + url.search,
      agent: false,
      headers: { ...headers, host: url.host },
      // TLS checks the certificate against the URL's name, not the address dialled.
      ...(https && isIP(name) === 0 ? { servername: name } : {}),
    });
    const timer = setTimeout(() => {
      done({ delivered: false, status: null, error: `no answer within ${timeoutMs} ms`, final: false });
      req.destroy();
    }, timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      done({ delivered: false, status: null, error: callbackErrorText(err.code ?? err.message), final: false });
    });
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (callbackDelivered(status)) done({ delivered: true, status });
      else done({ delivered: false, status, error: status >= 300 && status < 400 ? `answered ${status} (redirects are not followed)` : `answered ${status}`, final: false });
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > CALLBACK_RESPONSE_READ_BYTES) req.destroy();
      });
      res.on('close', () => clearTimeout(timer));
      res.on('error', () => undefined);
    });
    req.end(body);
  });
}

export class AsyncCallbackSender {
  readonly #o: CallbackSenderOptions;
  readonly #lookup: (name: string) => Promise<string[]>;
  readonly #running = new Set<Promise<void>>();
  readonly #sleeps = new Set<() => void>();
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #looking = false;

  constructor(options: CallbackSenderOptions) {
    this.#o = options;
    this.#lookup = options.lookup ?? systemLookup();
  }

  /** Looks every pollMs for callbacks a dead gateway left pending. */
  start(): void {
    if (this.#o.pollMs === undefined) return;
    this.#timer = setInterval(() => void this.recover(), this.#o.pollMs);
    this.#timer.unref();
  }

  /** Takes over the pending callbacks nobody holds (within the bound in flight) and delivers them. Returns how many. */
  async recover(): Promise<number> {
    const free = this.#o.settings.maxInFlight - this.#running.size;
    if (this.#stopped || this.#looking || free <= 0) return 0;
    this.#looking = true;
    try {
      const now = this.#o.now();
      const leaseMs = callbackLeaseMs(this.#o.settings);
      const calls = await this.#o.store.claimCallbacks(now, now - leaseMs, now + leaseMs, free);
      for (const call of calls) this.deliver(call, storedCallbackPayload(call));
      return calls.length;
    } catch (err) {
      this.#o.background.failed('async_callback', err);
      return 0;
    } finally {
      this.#looking = false;
    }
  }

  get inFlight(): number {
    return this.#running.size;
  }

  /** Starts delivering the final answer of `call` (which names a callback); returns at once. */
  deliver(call: AsyncCall, payload: CallbackPayload): void {
    const callback = call.callback;
    if (callback === null || this.#stopped) return;
    if (this.#running.size >= this.#o.settings.maxInFlight) {
      const limit = this.#o.settings.maxInFlight;
      this.#o.refusals?.refused('async_callbacks_in_flight', 'an async callback was not sent: the gateway had its bound of callbacks in flight', { function_id: call.function_id, limit });
      this.#write(call, { ...callback, state: 'failed', attempts: 0, last_status: null, last_error: `not sent: ${limit} callbacks were in flight on this gateway (FNHOST_ASYNC_CALLBACKS_IN_FLIGHT)`, updated_at: this.#o.now(), lease_until: null });
      return;
    }
    // Each end of the call is a delivery of its own: a dead call requeued and ended again starts its tries afresh.
    const fresh: AsyncCallback = { ...callback, state: 'pending', attempts: 0, last_status: null, last_error: null, lease_until: this.#o.now() + callbackLeaseMs(this.#o.settings) };
    const p = this.#deliver(call, fresh, payload)
      .catch((err: unknown) => this.#o.background.failed('async_callback', err, { function_id: call.function_id }))
      .finally(() => this.#running.delete(p));
    this.#running.add(p);
  }

  /** No more callbacks; resolves once those under way ended or after maxMs (they then stay pending). */
  async stop(maxMs: number): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    for (const wake of this.#sleeps) wake();
    if (this.#running.size === 0) return;
    await Promise.race([Promise.allSettled([...this.#running]), new Promise((r) => setTimeout(r, maxMs).unref())]);
  }

  /** One try: the policies' decision, then the POST to the address decided on. */
  async tryOnce(functionId: string, rawUrl: string, payload: CallbackPayload): Promise<TryOutcome> {
    try {
      checkCallbackUrl(rawUrl, this.#o.callbackHosts(functionId));
    } catch (err) {
      return { delivered: false, status: null, error: callbackErrorText(`not sent: ${(err as Error).message.replace(/; the call was not accepted$/, '')} any more`), final: true };
    }
    const url = new URL(rawUrl);
    const host = bareHost(url);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    const timeoutMs = this.#o.settings.timeoutMs;
    // The name's resolution counts in the try's time limit: a resolver that never answers must not hold a callback in flight.
    const lookup = (name: string) => within(this.#lookup(name), timeoutMs, () => Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEOUT' }));
    const check = await checkTarget(host, port, await this.#o.policies(functionId), lookup, this.#o.listener());
    if (!check.ok) {
      if (check.reason === 'denied') return { delivered: false, status: null, error: callbackErrorText(`not sent: ${check.message}`), final: true };
      const code = check.reason === 'dns' ? ((check.error as NodeJS.ErrnoException).code ?? 'failed') : 'no address';
      return { delivered: false, status: null, error: callbackErrorText(`resolving ${host}: ${code}`), final: false };
    }
    return postOnce(url, check.addresses[0]!, callbackHeaders(payload), payload.body, timeoutMs);
  }

  async #deliver(call: AsyncCall, start: AsyncCallback, payload: CallbackPayload): Promise<void> {
    let state: AsyncCallback = start;
    // Leased before the first try: from here a gateway that dies leaves it for another to take over.
    await this.#o.store.setCallback(call.function_id, call.id, state);
    for (let n = start.attempts + 1; n <= CALLBACK_MAX_ATTEMPTS; n++) {
      if (n > 1 && !(await this.#sleep(callbackBackoffMs(n, this.#o.settings.retryBaseMs, (this.#o.random ?? Math.random)())))) return;
      const out = await this.tryOnce(call.function_id, state.url, payload);
      const last = n === CALLBACK_MAX_ATTEMPTS;
      state = {
        ...state,
        attempts: n,
        last_status: out.status,
        last_error: out.delivered ? null : out.error,
        state: out.delivered ? 'delivered' : out.final || last ? 'failed' : 'pending',
        updated_at: this.#o.now(),
      };
      state.lease_until = state.state === 'pending' ? this.#o.now() + callbackLeaseMs(this.#o.settings) : null;
      await this.#o.store.setCallback(call.function_id, call.id, state);
      if (state.state !== 'pending') return;
    }
  }

  #write(call: AsyncCall, state: AsyncCallback): void {
    this.#o.store.setCallback(call.function_id, call.id, state).catch((err: unknown) => this.#o.background.failed('async_callback', err, { function_id: call.function_id }));
  }

  /** Waits `ms`; false when the sender stopped meanwhile. */
  #sleep(ms: number): Promise<boolean> {
    if (this.#stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#sleeps.delete(wake);
        resolve(!this.#stopped);
      };
      const timer = setTimeout(wake, ms);
      this.#sleeps.add(wake);
    });
  }
}

/** The callbacks' gauge (the refusals are fnhost_refused_total{reason="async_callbacks_in_flight"}). */
export function callbackMetricsText(sender: { readonly inFlight: number }): string {
  return ['# HELP fnhost_async_callbacks_in_flight Async callbacks this gateway is delivering (tries and backoffs).', '# TYPE fnhost_async_callbacks_in_flight gauge', `fnhost_async_callbacks_in_flight ${sender.inFlight}`].join('\n') + '\n';
}
