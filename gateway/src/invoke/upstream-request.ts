import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';

// One call to a runtime over undici's dispatch API, with a body that is a stream only when
// someone asks for one. undici's `request()` makes an AsyncResource, a Readable body and a
// promise-based consumer for every response; the invocation path reads most answers whole
// (small, of known length: ./proxy.ts), so here the chunks are kept as they arrive and handed
// over in one Buffer, and a Readable is made (fed with what arrived so far, then with
// undici's backpressure: pause when it is full, resume when read) only for a large, chunked
// or unlabelled-500 answer. Measured in-process: ~10-15 µs less client CPU per call
// (bench/RESULTS.md, 2026-11-28).

/** What undici's dump() reads before it gives up on the connection instead. */
const DUMP_LIMIT = 128 * 1024;

export interface UpstreamResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: UpstreamBody;
}

/** Sends one request on dispatcher; resolves at the response's head (an interim 1xx is skipped). */
export function requestUpstream(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions): Promise<UpstreamResponse> {
  return new Promise((resolve, reject) => {
    const handler = new UpstreamHandler(resolve, reject);
    try {
      dispatcher.dispatch(options, handler);
    } catch (err) {
      // undici refuses some requests synchronously (a header it does not send): as request() does, reject.
      reject(err as Error);
    }
  });
}

class UpstreamHandler implements Dispatcher.DispatchHandler {
  #resolve: ((r: UpstreamResponse) => void) | undefined;
  readonly #reject: (err: Error) => void;
  #body: UpstreamBody | undefined;

  constructor(resolve: (r: UpstreamResponse) => void, reject: (err: Error) => void) {
    this.#resolve = resolve;
    this.#reject = reject;
  }

  onRequestStart(): void {}

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return;
    const resolve = this.#resolve;
    this.#resolve = undefined;
    this.#body = new UpstreamBody(controller);
    resolve?.({ statusCode, headers, body: this.#body });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#body?.data(chunk);
  }

  onResponseEnd(): void {
    this.#body?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.#resolve !== undefined) {
      this.#resolve = undefined;
      this.#reject(err);
      return;
    }
    this.#body?.fail(err);
  }
}

/** A response body: read whole (whole()), as a stream (stream()), discarded (dump()) or cut (destroy()). */
export class UpstreamBody {
  readonly #controller: Dispatcher.DispatchController;
  #chunks: Buffer[] = [];
  #size = 0;
  #ended = false;
  #error: Error | undefined;
  #stream: Readable | undefined;
  #waiter: { resolve: (b: Buffer) => void; reject: (err: Error) => void } | undefined;
  #dumping = false;

  constructor(controller: Dispatcher.DispatchController) {
    this.#controller = controller;
  }

  data(chunk: Buffer): void {
    if (this.#stream !== undefined) {
      if (!this.#stream.push(chunk)) this.#controller.pause();
      return;
    }
    this.#size += chunk.length;
    if (this.#dumping) {
      if (this.#size > DUMP_LIMIT) this.#abort(new Error('response body discarded'));
      return;
    }
    this.#chunks.push(chunk);
  }

  end(): void {
    this.#ended = true;
    if (this.#stream !== undefined) {
      this.#stream.push(null);
      return;
    }
    this.#settle();
  }

  fail(err: Error): void {
    if (this.#ended || this.#error !== undefined) return;
    this.#error = err;
    if (this.#stream !== undefined) {
      this.#stream.destroy(err);
      return;
    }
    this.#settle();
  }

  /** The whole body once it ended (for answers of known, small length). */
  whole(): Promise<Buffer> {
    if (this.#stream !== undefined) return Promise.reject(new Error('the body is being streamed'));
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
      this.#settle();
    });
  }

  /** Reads and discards the rest (keeping the connection), or cuts the connection past DUMP_LIMIT; never rejects. */
  dump(): Promise<void> {
    this.#dumping = true;
    this.#chunks = [];
    if (this.#size > DUMP_LIMIT) this.#abort(new Error('response body discarded'));
    return this.whole().then(() => undefined, () => undefined);
  }

  /** Cuts this response's connection (the rest of the body is not read). */
  destroy(): void {
    this.#abort(new Error('response body destroyed'));
  }

  /** The body as a Readable: what arrived so far, then the rest with backpressure; destroying it cuts the connection. */
  stream(): Readable {
    if (this.#stream !== undefined) return this.#stream;
    const s = new Readable({
      read: () => this.#controller.resume(),
      destroy: (err, callback) => {
        if (!this.#ended && this.#error === undefined) this.#abort(err ?? new Error('response body destroyed'));
        callback(err);
      },
    });
    this.#stream = s;
    for (const chunk of this.#chunks) s.push(chunk);
    this.#chunks = [];
    if (this.#error !== undefined) s.destroy(this.#error);
    else if (this.#ended) s.push(null);
    return s;
  }

  #abort(err: Error): void {
    if (this.#ended || this.#error !== undefined) return;
    this.#error = err;
    if (!this.#controller.aborted) this.#controller.abort(err);
    this.#settle();
  }

  #settle(): void {
    const waiter = this.#waiter;
    if (waiter === undefined) return;
    if (this.#error !== undefined) {
      this.#waiter = undefined;
      waiter.reject(this.#error);
    } else if (this.#ended) {
      this.#waiter = undefined;
      const chunks = this.#chunks;
      this.#chunks = [];
      waiter.resolve(this.#dumping ? Buffer.alloc(0) : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.#size));
    }
  }
}
