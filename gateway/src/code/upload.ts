import type { IncomingMessage } from 'node:http';
import { FnhostError } from '@fnhost/core';
import { BodyTimeoutError } from '../invoke/body-budget.ts';

// An upload's body as the code store reads it: one chunk at a time, pulled (the socket is not
// read ahead of the store's writes: backpressure), with the body-idle timeout of every request
// body (FNHOST_BODY_IDLE_TIMEOUT_MS), so a stalled sender holds its slot and temp file no longer.

/** The request body as an async iterable of chunks; a gap of `idleMs` without a byte ends it with BodyTimeoutError. */
export async function* bodyChunks(req: IncomingMessage, idleMs: number): AsyncGenerator<Uint8Array> {
  for (;;) {
    const chunk = req.read() as Buffer | null;
    if (chunk !== null) {
      yield chunk;
      continue;
    }
    if (req.readableEnded) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => done(new BodyTimeoutError(idleMs)), idleMs);
      const onReadable = (): void => done();
      const onEnd = (): void => done();
      const onError = (err: Error): void => done(err);
      const onClose = (): void => done(req.readableEnded ? undefined : new Error('the caller closed the connection while sending the body'));
      function done(err?: Error): void {
        clearTimeout(timer);
        req.off('readable', onReadable);
        req.off('end', onEnd);
        req.off('error', onError);
        req.off('close', onClose);
        if (err) reject(err);
        else resolve();
      }
      req.on('readable', onReadable);
      req.on('end', onEnd);
      req.on('error', onError);
      req.on('close', onClose);
    });
  }
}

/** More uploads at once than FNHOST_CODE_UPLOADS_MAX_CONCURRENT: 429, try again shortly. */
export class TooManyUploadsError extends FnhostError {
  readonly retryAfterSeconds = 1;
  constructor(limit: number) {
    super('too_many_uploads', 429, `${limit} code uploads are streaming to this gateway already (FNHOST_CODE_UPLOADS_MAX_CONCURRENT); try again shortly`);
  }
}

/** The uploads streaming now, bounded. */
export class UploadSlots {
  readonly limit: number;
  #active = 0;
  constructor(limit: number) {
    this.limit = limit;
  }
  get active(): number {
    return this.#active;
  }
  /** A slot for one upload (release it when done), or TooManyUploadsError. */
  take(): () => void {
    if (this.#active >= this.limit) throw new TooManyUploadsError(this.limit);
    this.#active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
    };
  }
}
