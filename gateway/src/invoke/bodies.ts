import type { IncomingMessage } from 'node:http';
import { PayloadTooLargeError } from './errors.ts';
import { BodyMemoryError, BodyTimeoutError, type BodyLease } from './body-budget.ts';

// Request and response bodies on the invocation path: read with a byte
// count (a declared Content-Length is not trusted alone), collected up to a
// bound, and the error message a bare 500 carries.

/** A test or scheduled run keeps at most this much of the response body (and a 500's body is read this far for its message). */
export const CAPTURE_LIMIT = 1024 * 1024;

/** The most of a 500's text body kept as its error_message (the runtime bounds a thrown error's text the same way). */
export const MAX_ERROR_MESSAGE_CHARS = 1024;

/** A text bounded to MAX_ERROR_MESSAGE_CHARS, marked where it was cut. */
export function boundedMessage(text: string): string {
  return text.length <= MAX_ERROR_MESSAGE_CHARS ? text : `${text.slice(0, MAX_ERROR_MESSAGE_CHARS)}…`;
}

/** A body sent as text: a text/* type, or none at all (res.end('...')). */
function isTextType(contentType: string | string[] | undefined): boolean {
  if (contentType === undefined) return true;
  return typeof contentType === 'string' && /^\s*text\//i.test(contentType);
}

/**
 * The error_message of a 500 the handler answered without throwing (spec-checklist): a JSON
 * body's `message` (or `error`), a text body's text, bounded; else `HTTP 500`.
 */
export function messageFrom500(body: Buffer, contentType: string | string[] | undefined): string {
  const text = body.toString('utf8');
  const looksJson = (typeof contentType === 'string' && contentType.includes('json')) || /^\s*[{[]/.test(text);
  if (looksJson) {
    try {
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
        const { message, error } = parsed as Record<string, unknown>;
        if (typeof message === 'string' && message !== '') return boundedMessage(message);
        if (typeof error === 'string' && error !== '') return boundedMessage(error);
        if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') return boundedMessage((error as { message: string }).message);
      }
    } catch {
      // not JSON after all
    }
  }
  if (isTextType(contentType) && !text.includes('\uFFFD')) {
    const trimmed = text.trim();
    if (trimmed !== '') return boundedMessage(trimmed);
  }
  return 'HTTP 500';
}

export async function collect(body: AsyncIterable<Buffer>, max: number): Promise<{ data: Buffer; complete: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > max) return { data: Buffer.concat(chunks, size), complete: false };
  }
  return { data: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), complete: true };
}

/**
 * Reads a request body, counting bytes as they arrive (Content-Length is not trusted alone).
 * With a lease, every byte held is covered by the body memory budget first (./body-budget.ts:
 * BodyMemoryError past it); with idleTimeoutMs, a body that stops arriving for that long is
 * given up (BodyTimeoutError), so a stalled sender holds neither memory nor the call for long.
 */
export function readBody(req: IncomingMessage, max: number, options: { lease?: BodyLease; idleTimeoutMs?: number } = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const { lease, idleTimeoutMs } = options;
    const idle = idleTimeoutMs === undefined ? undefined : setTimeout(() => fail(new BodyTimeoutError(idleTimeoutMs)), idleTimeoutMs);
    idle?.unref();
    const fail = (err: Error) => {
      if (done) return;
      done = true;
      clearTimeout(idle);
      // What was read is let go now, not when the caller's connection ends.
      chunks.length = 0;
      req.pause();
      reject(err);
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      idle?.refresh();
      size += chunk.length;
      if (size > max) {
        fail(new PayloadTooLargeError(max));
        return;
      }
      if (lease !== undefined && !lease.cover(size)) {
        fail(new BodyMemoryError(lease.budgetLimit));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => {
      if (done) return;
      done = true;
      clearTimeout(idle);
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    req.once('error', (err) => fail(err));
    req.once('close', () => fail(new Error('the caller closed the connection while sending the body')));
  });
}

export function drainRequest(req: IncomingMessage): void {
  if (!req.complete) req.resume();
}
