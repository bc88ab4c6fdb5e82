// Bodies as they cross to the main thread: strings as they are, bytes in an ArrayBuffer of their own
// so the transfer moves only their bytes.
import type { Body } from './protocol.ts';

/** Copies a chunk into its own ArrayBuffer when it is a view of a larger (or pooled) one, so the transfer moves only its bytes. */
function ownBuffer(chunk: Uint8Array): Uint8Array {
  const ab = chunk.buffer;
  if (chunk.byteOffset === 0 && chunk.byteLength === ab.byteLength && ab instanceof ArrayBuffer) return chunk;
  return new Uint8Array(chunk);
}

export function toBody(chunk: unknown, encoding: BufferEncoding | undefined, what: string): Body {
  if (chunk === undefined || chunk === null) return undefined;
  if (typeof chunk === 'string') return encoding && encoding !== 'utf8' && encoding !== 'utf-8' ? ownBuffer(Buffer.from(chunk, encoding)) : chunk;
  if (chunk instanceof Uint8Array) return ownBuffer(chunk);
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk.slice(0));
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength) as ArrayBuffer);
  throw new TypeError(`${what}: the chunk must be a string, Buffer or Uint8Array, got ${typeof chunk}`);
}

export function byteLength(b: Body): number {
  if (b === undefined) return 0;
  return typeof b === 'string' ? Buffer.byteLength(b) : b.byteLength;
}

export function transferOf(b: Body): ArrayBuffer[] | undefined {
  return b instanceof Uint8Array ? [b.buffer as ArrayBuffer] : undefined;
}
