import { request } from 'node:http';
import { createHash } from 'node:crypto';

// Code uploads for tests (PUT /api/v1/code/{digest}): bytes streamed from a generator over a
// real connection, and deterministic large handler bundles made once per test file.

export interface UploadAnswer {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

/** PUTs `chunks` to /api/v1/code/{digest}; `length` sets Content-Length (else chunked). `stallAfter`: stop sending after that many chunks, without ending. */
export function putCode(url: string, token: string, digest: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>, options: { length?: number; stallAfter?: number; query?: string } = {}): Promise<UploadAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/v1/code/${digest}${options.query ?? ''}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', ...(options.length === undefined ? {} : { 'content-length': String(options.length) }) },
    }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: unknown = text;
        try {
          body = text === '' ? undefined : JSON.parse(text);
        } catch {
          // text
        }
        resolve({ status: res.statusCode!, body, headers: res.headers });
      });
    });
    // An answer before the whole body was sent (a refusal) may end the write with EPIPE/ECONNRESET: the answer counts.
    let answered = false;
    req.once('response', () => (answered = true));
    req.on('error', (err) => {
      if (!answered) setTimeout(() => (answered ? undefined : reject(err)), 1000);
    });
    void (async () => {
      let n = 0;
      for await (const chunk of chunks) {
        if (options.stallAfter !== undefined && n++ >= options.stallAfter) return;
        if (req.destroyed) return;
        if (!req.write(chunk)) await new Promise<void>((r) => {
          const done = (): void => {
            req.off('drain', done);
            req.off('close', done);
            r();
          };
          req.on('drain', done);
          req.on('close', done);
        });
      }
      req.end();
    })().catch(reject);
  });
}

export function sha256(bytes: Uint8Array): string {
  return 'sha256:' + createHash('sha256').update(bytes).digest('hex');
}

/** Yields `bytes` in chunks of 64 KiB. */
export function* chunked(bytes: Buffer, size = 64 * 1024): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/**
 * A handler of about `bytes` bytes, the same for the same arguments: an ES module answering
 * {size, tag} whose bulk is a string constant of deterministic filler (as a large SDK's
 * bundle is mostly code that is parsed and not run).
 */
export function bigHandler(bytes: number, tag: string): Buffer {
  const head = `const FILLER = "`;
  const tail = `";\nexport default (req, res) => res.json({ tag: ${JSON.stringify(tag)}, filler: FILLER.length });\n`;
  const fillerLength = Math.max(0, bytes - head.length - tail.length);
  const filler = Buffer.alloc(fillerLength);
  // A simple deterministic sequence of letters (no quotes or backslashes).
  let x = 12345;
  for (let i = 0; i < fillerLength; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    filler[i] = 97 + (x % 26);
  }
  return Buffer.concat([Buffer.from(head), filler, Buffer.from(tail)]);
}
