import { CodeDigestMismatchError, CodeTooLargeError } from './errors.ts';
import { DigestCounter } from './digest.ts';

// An upload as it streams in: each chunk hashed, counted and handed to the store's sink (a temp
// file, GridFS chunks) before the next is read, so no more than a chunk is ever held here.

/**
 * Reads `source` to its end through `write`, awaiting each write (backpressure), and returns
 * the size once the bytes are the ones `expectedDigest` names. `grown(size)` runs before each
 * write with the size so far: a store's bound check, which throws to stop the upload.
 */
export async function receiveCode(
  source: AsyncIterable<Uint8Array>,
  expectedDigest: string,
  maxBytes: number,
  write: (chunk: Uint8Array) => Promise<void>,
  grown: (size: number) => void,
): Promise<number> {
  const counter = new DigestCounter();
  for await (const chunk of source) {
    counter.update(chunk);
    if (counter.size > maxBytes) throw new CodeTooLargeError(undefined);
    grown(counter.size);
    await write(chunk);
  }
  const actual = counter.digest();
  if (actual !== expectedDigest) throw new CodeDigestMismatchError(expectedDigest, actual);
  return counter.size;
}
