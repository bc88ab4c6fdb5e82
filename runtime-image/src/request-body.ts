// The request body as the handler's `req.body`: JSON parsed (malformed → 400 before the handler),
// text decoded by its charset, anything else a Buffer.

export class InvalidJsonError extends Error {
  override name = 'InvalidJsonError';
}

export function isJsonType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const mime = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'));
}

function charsetOf(contentType: string): string {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType);
  return m ? m[1]!.toLowerCase() : 'utf-8';
}

/** JSON → parsed (400 before the handler when malformed), text/* → string, else Buffer; empty → undefined. */
export function parseBody(raw: Uint8Array | undefined, contentType: string | undefined): unknown {
  if (raw === undefined || raw.byteLength === 0) return undefined;
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (isJsonType(contentType)) {
    const text = buf.toString('utf8');
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new InvalidJsonError(`request body is not valid JSON (content-type ${contentType}): ${(err as Error).message}`);
    }
  }
  if (contentType && /^\s*text\//i.test(contentType)) {
    const charset = charsetOf(contentType);
    if (charset === 'utf-8' || charset === 'utf8') return buf.toString('utf8');
    try {
      return new TextDecoder(charset).decode(buf);
    } catch {
      return buf.toString('utf8');
    }
  }
  return buf;
}

