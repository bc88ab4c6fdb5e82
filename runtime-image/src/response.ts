// The handler's `res`: Express-style methods over a small message sink. A response that is
// answered in one go (json/send/end without write) travels as one message; write() streams
// each chunk to the main thread as it comes.
import { W_CHUNK, W_END, W_FULL, W_HEAD, type Body, type FromWorker } from './protocol.ts';
import { checkFinalStatus, checkTransferEncoding } from './framing.ts';

// Not `import ... from 'node:http'`: an ES module import of node:http builds its namespace from every
// export, and its lazy WebSocket/EventSource getters load undici (≈ 12 MB per thread, measured).
const { STATUS_CODES } = process.getBuiltinModule('node:http');

export interface Sink {
  post(msg: FromWorker, transfer?: ArrayBuffer[]): void;
  /** The response has ended (or was aborted): the worker forgets the request. */
  finished(id: number): void;
}

const TYPES: Record<string, string> = {
  json: 'application/json; charset=utf-8',
  html: 'text/html; charset=utf-8',
  htm: 'text/html; charset=utf-8',
  text: 'text/plain; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  xml: 'application/xml; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  ico: 'image/x-icon',
  pdf: 'application/pdf',
  bin: 'application/octet-stream',
  'event-stream': 'text/event-stream',
  sse: 'text/event-stream',
  form: 'application/x-www-form-urlencoded',
  urlencoded: 'application/x-www-form-urlencoded',
};

/** Express's res.type: a short name or extension maps to a mime type; a value with "/" is kept. */
export function mimeFor(type: string): string {
  if (type.includes('/')) {
    // text/* and JSON without a charset get utf-8, like Express's res.type.
    if (!/;\s*charset=/i.test(type) && (/^text\//i.test(type) || /^application\/json$/i.test(type))) return `${type}; charset=utf-8`;
    return type;
  }
  const key = type.replace(/^\./, '').toLowerCase();
  return TYPES[key] ?? 'application/octet-stream';
}

function headerValue(value: unknown, name: string): string | string[] {
  if (value === undefined || value === null) throw new TypeError(`res.set("${name}", ${String(value)}): a header value must be a string, number or array`);
  const v = Array.isArray(value) ? value.map((one) => String(one)) : String(value);
  // Refused here, where the handler's stack shows who set it; the main thread re-checks what is sent (framing.ts).
  if (String(name).toLowerCase() === 'transfer-encoding') checkTransferEncoding(v, `res.set("${name}")`);
  return v;
}

/** Copies a chunk into its own ArrayBuffer when it is a view of a larger (or pooled) one, so the transfer moves only its bytes. */
function ownBuffer(chunk: Uint8Array): Uint8Array {
  const ab = chunk.buffer;
  if (chunk.byteOffset === 0 && chunk.byteLength === ab.byteLength && ab instanceof ArrayBuffer) return chunk;
  return new Uint8Array(chunk);
}

function toBody(chunk: unknown, encoding: BufferEncoding | undefined, what: string): Body {
  if (chunk === undefined || chunk === null) return undefined;
  if (typeof chunk === 'string') return encoding && encoding !== 'utf8' && encoding !== 'utf-8' ? ownBuffer(Buffer.from(chunk, encoding)) : chunk;
  if (chunk instanceof Uint8Array) return ownBuffer(chunk);
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk.slice(0));
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength) as ArrayBuffer);
  throw new TypeError(`${what}: the chunk must be a string, Buffer or Uint8Array, got ${typeof chunk}`);
}

function byteLength(b: Body): number {
  if (b === undefined) return 0;
  return typeof b === 'string' ? Buffer.byteLength(b) : b.byteLength;
}

function transferOf(b: Body): ArrayBuffer[] | undefined {
  return b instanceof Uint8Array ? [b.buffer as ArrayBuffer] : undefined;
}

export class HeadersSentError extends Error {
  override name = 'HeadersSentError';
  code = 'ERR_HTTP_HEADERS_SENT';
}

export class FnResponse {
  statusCode = 200;
  statusMessage = '';
  headersSent = false;
  writableEnded = false;
  /** The caller went away (or the invocation timed out): further output is dropped. */
  aborted = false;
  readonly id: number;
  readonly #sink: Sink;
  readonly #isHead: boolean;
  /** lower-case name → [name as set, value] */
  readonly #headers = new Map<string, [string, string | string[]]>();

  constructor(id: number, sink: Sink, method: string) {
    this.id = id;
    this.#sink = sink;
    this.#isHead = method === 'HEAD';
  }

  get finished(): boolean {
    return this.writableEnded;
  }

  #assertHeadersOpen(what: string): void {
    if (this.headersSent) throw new HeadersSentError(`${what}: cannot set headers after they are sent to the client`);
  }

  status(code: number): this {
    if (!Number.isInteger(code) || code < 100 || code > 999) throw new RangeError(`res.status(${JSON.stringify(code)}): the status must be an integer from 100 to 999`);
    checkFinalStatus(code, `res.status(${code})`);
    this.statusCode = code;
    return this;
  }

  set(field: string | Record<string, unknown>, value?: unknown): this {
    if (typeof field === 'object' && field !== null) {
      for (const [k, v] of Object.entries(field)) this.set(k, v);
      return this;
    }
    this.#assertHeadersOpen(`res.set("${field}")`);
    const lc = String(field).toLowerCase();
    let v = headerValue(value, field);
    if (lc === 'content-type' && typeof v === 'string') v = mimeFor(v);
    this.#headers.set(lc, [String(field), v]);
    return this;
  }

  header(field: string | Record<string, unknown>, value?: unknown): this {
    return this.set(field, value);
  }

  setHeader(name: string, value: unknown): this {
    this.#assertHeadersOpen(`res.setHeader("${name}")`);
    this.#headers.set(String(name).toLowerCase(), [String(name), headerValue(value, name)]);
    return this;
  }

  append(field: string, value: unknown): this {
    const prev = this.get(field);
    const add = headerValue(value, field);
    if (prev === undefined) return this.setHeader(field, add);
    return this.setHeader(field, ([] as string[]).concat(prev, add));
  }

  get(field: string): string | string[] | undefined {
    return this.#headers.get(String(field).toLowerCase())?.[1];
  }

  getHeader(name: string): string | string[] | undefined {
    return this.get(name);
  }

  hasHeader(name: string): boolean {
    return this.#headers.has(String(name).toLowerCase());
  }

  removeHeader(name: string): void {
    this.#assertHeadersOpen(`res.removeHeader("${name}")`);
    this.#headers.delete(String(name).toLowerCase());
  }

  getHeaderNames(): string[] {
    return [...this.#headers.keys()];
  }

  /** Lower-case names → values, like Node's response.getHeaders(). */
  getHeaders(): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [lc, [, v]] of this.#headers) out[lc] = v;
    return out;
  }

  type(mime: string): this {
    return this.set('Content-Type', mimeFor(mime));
  }

  contentType(mime: string): this {
    return this.type(mime);
  }

  location(url: string): this {
    return this.set('Location', url);
  }

  cookie(name: string, value: unknown, options: { maxAge?: number; expires?: Date; path?: string; domain?: string; secure?: boolean; httpOnly?: boolean; sameSite?: 'strict' | 'lax' | 'none' | boolean; encode?: (s: string) => string } = {}): this {
    const encode = options.encode ?? encodeURIComponent;
    const v = typeof value === 'object' ? 'j:' + JSON.stringify(value) : String(value);
    let c = `${name}=${encode(v)}`;
    if (options.maxAge !== undefined) {
      c += `; Max-Age=${Math.floor(options.maxAge / 1000)}`;
      c += `; Expires=${new Date(Date.now() + options.maxAge).toUTCString()}`;
    } else if (options.expires) c += `; Expires=${options.expires.toUTCString()}`;
    c += `; Path=${options.path ?? '/'}`;
    if (options.domain) c += `; Domain=${options.domain}`;
    if (options.secure) c += '; Secure';
    if (options.httpOnly) c += '; HttpOnly';
    if (options.sameSite) c += `; SameSite=${options.sameSite === true ? 'Strict' : options.sameSite[0]!.toUpperCase() + options.sameSite.slice(1)}`;
    return this.append('Set-Cookie', c);
  }

  clearCookie(name: string, options: { path?: string; domain?: string } = {}): this {
    return this.cookie(name, '', { ...options, expires: new Date(1) });
  }

  writeHead(code: number, message?: string | Record<string, unknown>, headers?: Record<string, unknown>): this {
    this.status(code);
    if (typeof message === 'string') this.statusMessage = message;
    else if (message) headers = message;
    if (headers) for (const [k, v] of Object.entries(headers)) this.setHeader(k, v);
    return this;
  }

  /** The headers as set; the main thread frames them (Content-Length, hop-by-hop: framing.ts). */
  #flatHeaders(): string[] {
    const flat: string[] = [];
    for (const [, [name, v]] of this.#headers) {
      if (Array.isArray(v)) for (const one of v) flat.push(name, one);
      else flat.push(name, v);
    }
    return flat;
  }

  #sendHead(): void {
    this.headersSent = true;
    if (!this.aborted) this.#sink.post({ t: W_HEAD, i: this.id, s: this.statusCode, h: this.#flatHeaders() });
  }

  flushHeaders(): void {
    if (!this.headersSent) this.#sendHead();
  }

  write(chunk: unknown, encoding?: BufferEncoding | ((err?: Error) => void), cb?: (err?: Error) => void): boolean {
    if (typeof encoding === 'function') [cb, encoding] = [encoding, undefined];
    if (this.writableEnded) throw new Error('res.write() after res.end(): the response has already ended');
    const body = toBody(chunk, encoding, 'res.write()');
    if (!this.headersSent) this.#sendHead();
    if (!this.aborted && body !== undefined && byteLength(body) > 0 && !this.#isHead) this.#sink.post({ t: W_CHUNK, i: this.id, b: body }, transferOf(body));
    if (cb) queueMicrotask(cb);
    return true;
  }

  end(chunk?: unknown, encoding?: BufferEncoding | (() => void), cb?: () => void): this {
    if (typeof chunk === 'function') [cb, chunk] = [chunk as () => void, undefined];
    if (typeof encoding === 'function') [cb, encoding] = [encoding, undefined];
    if (this.writableEnded) return this;
    const body = toBody(chunk, encoding, 'res.end()');
    this.writableEnded = true;
    if (!this.aborted) {
      if (!this.headersSent) {
        this.headersSent = true;
        const noBody = this.#isHead || this.statusCode === 204 || this.statusCode === 304 || (this.statusCode >= 100 && this.statusCode < 200);
        const out = noBody ? undefined : body;
        this.#sink.post({ t: W_FULL, i: this.id, s: this.statusCode, h: this.#flatHeaders(), b: out }, transferOf(out));
      } else {
        const out = this.#isHead ? undefined : body;
        this.#sink.post({ t: W_END, i: this.id, b: out }, transferOf(out));
      }
    }
    this.#sink.finished(this.id);
    if (cb) queueMicrotask(cb);
    return this;
  }

  json(value: unknown): this {
    const text = JSON.stringify(value);
    if (!this.#headers.has('content-type')) this.#headers.set('content-type', ['Content-Type', 'application/json; charset=utf-8']);
    return this.end(text ?? '');
  }

  /** Express's res.send: strings default to text/html, Buffers to application/octet-stream, anything else is JSON. */
  send(body?: unknown): this {
    if (typeof body === 'string') {
      if (!this.#headers.has('content-type')) this.#headers.set('content-type', ['Content-Type', 'text/html; charset=utf-8']);
      return this.end(body);
    }
    if (body instanceof Uint8Array || body instanceof ArrayBuffer) {
      if (!this.#headers.has('content-type')) this.#headers.set('content-type', ['Content-Type', 'application/octet-stream']);
      return this.end(body);
    }
    if (body === undefined) return this.end();
    return this.json(body);
  }

  sendStatus(code: number): this {
    this.status(code);
    if (!this.#headers.has('content-type')) this.#headers.set('content-type', ['Content-Type', 'text/plain; charset=utf-8']);
    return this.end(STATUS_CODES[code] ?? String(code));
  }

  redirect(statusOrUrl: number | string, maybeUrl?: string): this {
    const [code, url] = typeof statusOrUrl === 'number' ? [statusOrUrl, String(maybeUrl)] : [302, String(statusOrUrl)];
    this.status(code).location(url);
    if (!this.#headers.has('content-type')) this.#headers.set('content-type', ['Content-Type', 'text/plain; charset=utf-8']);
    return this.end(`${STATUS_CODES[code] ?? 'Redirecting'}. Redirecting to ${url}`);
  }
}
