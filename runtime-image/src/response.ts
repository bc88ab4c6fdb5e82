// The handler's `res`: Express 5's response methods, by the packages Express uses (libraries.ts),
// over a small message sink. A response that is answered in one go (json/send/end without write)
// travels as one message; write() streams each chunk to the main thread as it comes.
import { W_CHUNK, W_END, W_FULL, W_HEAD, type FromWorker } from './protocol.ts';
import { checkFinalStatus, checkTransferEncoding } from './framing.ts';
import { contentTypeOf, normalizeType, typeFromName, withCharset } from './content-type.ts';
import { clearingOptions, serializeCookie, type CookieOptions } from './cookies.ts';
import { http } from './libraries.ts';
import { byteLength, toBody, transferOf } from './response-body.ts';
import { weakEtag } from './etag.ts';
import type { FnRequest } from './request.ts';

const { basename, extname } = process.getBuiltinModule('node:path');

export interface Sink {
  post(msg: FromWorker, transfer?: ArrayBuffer[]): void;
  /** The response has ended (or was aborted): the worker forgets the request. */
  finished(id: number): void;
}

function headerValue(value: unknown, name: string): string | string[] {
  if (value === undefined || value === null) throw new TypeError(`res.setHeader("${name}", ${String(value)}): a header value must be a string, number or array`);
  const v = Array.isArray(value) ? value.map((one) => String(one)) : String(value);
  // Refused here, where the handler's stack shows who set it; the main thread re-checks what is sent (framing.ts).
  if (String(name).toLowerCase() === 'transfer-encoding') checkTransferEncoding(v, `res.set("${name}")`);
  return v;
}

export class HeadersSentError extends Error {
  override name = 'HeadersSentError';
  code = 'ERR_HTTP_HEADERS_SENT';
}

/** A format map (res.format) is a key per type the handler can answer; each is called as Express calls it. */
export type FormatHandlers = Record<string, (req: FnRequest, res: FnResponse, next: (err?: unknown) => void) => void>;

export class FnResponse {
  statusCode = 200;
  statusMessage = '';
  headersSent = false;
  writableEnded = false;
  /** The caller went away (or the invocation timed out): further output is dropped. */
  aborted = false;
  readonly id: number;
  /** The call's request, as Express's `res.req` (set by the worker once both exist). */
  req!: FnRequest;
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

  /** Express's messages; a 1xx is refused besides (framing.ts: a function's answer must be final). */
  status(code: number): this {
    if (!Number.isInteger(code)) throw new TypeError(`Invalid status code: ${JSON.stringify(code)}. Status code must be an integer.`);
    if (code < 100 || code > 999) throw new RangeError(`Invalid status code: ${JSON.stringify(code)}. Status code must be greater than 99 and less than 1000.`);
    checkFinalStatus(code, `res.status(${code})`);
    this.statusCode = code;
    return this;
  }

  set(field: string | Record<string, unknown>, value?: unknown): this {
    if (arguments.length !== 2) {
      for (const [k, v] of Object.entries(field as Record<string, unknown>)) this.set(k, v);
      return this;
    }
    let v: string | string[] = Array.isArray(value) ? value.map(String) : String(value);
    if ((field as string).toLowerCase() === 'content-type') {
      if (Array.isArray(v)) throw new TypeError('Content-Type cannot be set to an Array');
      v = contentTypeOf(v) as string;
    }
    return this.setHeader(field as string, v);
  }

  header(field: string | Record<string, unknown>, value?: unknown): this {
    return arguments.length === 2 ? this.set(field, value) : this.set(field);
  }

  setHeader(name: string, value: unknown): this {
    this.#assertHeadersOpen(`res.setHeader("${name}")`);
    this.#headers.set(String(name).toLowerCase(), [String(name), headerValue(value, name)]);
    return this;
  }

  append(field: string, value: unknown): this {
    const prev = this.get(field);
    let next = value;
    if (prev) next = Array.isArray(prev) ? prev.concat(value as string) : Array.isArray(value) ? [prev].concat(value) : [prev, value];
    return this.set(field, next);
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

  type(type: string): this {
    return this.set('Content-Type', typeFromName(type));
  }

  contentType(type: string): this {
    return this.type(type);
  }

  /** Adds a field to Vary, once (the vary package). */
  vary(field: string | string[]): this {
    http().vary(this, field);
    return this;
  }

  /** Content-Disposition: attachment (with the file name's type when one is given). */
  attachment(filename?: string): this {
    const name = filename !== undefined ? basename(filename) : undefined;
    if (name) this.type(extname(name));
    return this.set('Content-Disposition', http().contentDisposition.create(name));
  }

  location(url: string): this {
    return this.set('Location', http().encodeUrl(url));
  }

  cookie(name: string, value: unknown, options?: CookieOptions): this {
    return this.append('Set-Cookie', serializeCookie(name, value, options));
  }

  clearCookie(name: string, options?: CookieOptions): this {
    return this.cookie(name, '', clearingOptions(options));
  }

  /**
   * Calls the handler of the type the caller accepts best (Vary: Accept). With none acceptable and
   * no `default`, answers 406 itself: a function has no next middleware to pass Express's error to.
   */
  format(handlers: FormatHandlers): this {
    const req = this.req;
    const next = (err?: unknown): void => {
      if (err !== undefined) throw err;
    };
    const keys = Object.keys(handlers).filter((k) => k !== 'default');
    const key = keys.length > 0 ? req.accepts(keys) : false;
    this.vary('Accept');
    if (typeof key === 'string') {
      this.set('Content-Type', normalizeType(key));
      handlers[key]!(req, this, next);
    } else if (handlers.default) {
      handlers.default(req, this, next);
    } else {
      const types = keys.map(normalizeType);
      this.status(406).type('txt').send(`Not Acceptable. Supports: ${types.join(', ')}`);
    }
    return this;
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
    const body = JSON.stringify(value);
    if (!this.get('Content-Type')) this.set('Content-Type', 'application/json');
    return this.send(body);
  }

  /**
   * Express's res.send: a string defaults to text/html and gets charset=utf-8, bytes to
   * application/octet-stream, null to an empty body, anything else is JSON; a weak ETag (as
   * Express's default "etag" setting), 304 when the request is fresh, no body for 204/205/304/HEAD.
   */
  send(body?: unknown): this {
    let chunk = body;
    switch (typeof chunk) {
      case 'string': {
        const type = this.get('Content-Type');
        if (typeof type === 'string') this.set('Content-Type', withCharset(type, 'utf-8'));
        else this.type('html');
        break;
      }
      case 'boolean':
      case 'number':
      case 'object':
        if (chunk === null) chunk = '';
        else if (ArrayBuffer.isView(chunk) || chunk instanceof ArrayBuffer) {
          if (!this.get('Content-Type')) this.type('bin');
        } else return this.json(chunk);
        break;
    }
    if (chunk !== undefined && !this.get('Transfer-Encoding')) {
      const bytes = typeof chunk === 'string' ? chunk : bytesOf(chunk as ArrayBufferView | ArrayBuffer);
      this.set('Content-Length', typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.byteLength);
      if (!this.get('ETag')) this.set('ETag', weakEtag(bytes));
    }
    if (this.req?.fresh) this.status(304);
    if (this.statusCode === 204 || this.statusCode === 304) {
      this.removeHeader('Content-Type');
      this.removeHeader('Content-Length');
      this.removeHeader('Transfer-Encoding');
      chunk = '';
    }
    if (this.statusCode === 205) {
      this.set('Content-Length', '0');
      this.removeHeader('Transfer-Encoding');
      chunk = '';
    }
    return this.#isHead ? this.end() : this.end(chunk);
  }

  sendStatus(code: number): this {
    const body = http().statuses.message[code] || String(code);
    this.status(code);
    this.type('txt');
    return this.send(body);
  }

  /** Express's res.redirect: the URL encoded into Location, a body by the caller's Accept (text, HTML, or none). */
  redirect(statusOrUrl: number | string, maybeUrl?: string): this {
    let status = 302;
    let address = statusOrUrl as string;
    if (arguments.length === 2) {
      status = statusOrUrl as number;
      address = maybeUrl as string;
    }
    address = this.location(address).get('Location') as string;
    const message = http().statuses.message[status];
    let body = '';
    this.format({
      text: () => {
        body = `${message}. Redirecting to ${address}`;
      },
      html: () => {
        const u = http().escapeHtml(address);
        body = `<!DOCTYPE html><head><title>${message}</title></head><body><p>${message}. Redirecting to ${u}</p></body>`;
      },
      default: () => {
        body = '';
      },
    });
    this.status(status);
    this.set('Content-Length', Buffer.byteLength(body));
    return this.#isHead ? this.end() : this.end(body);
  }
}

/** A Buffer over the same bytes (etag takes a string or a Buffer). */
function bytesOf(chunk: ArrayBufferView | ArrayBuffer): Buffer {
  if (chunk instanceof ArrayBuffer) return Buffer.from(chunk);
  return Buffer.from(chunk.buffer as ArrayBuffer, chunk.byteOffset, chunk.byteLength);
}
