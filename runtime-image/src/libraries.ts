// The small packages Express 5 builds req/res on (cookie, statuses, encodeurl, vary, mime-types…),
// so a handler's req/res behave as Express's do by the same code, not a hand-written copy. They are
// bundled into ../vendor/ at install (tools/bundle-libraries.mjs): the runtime installs nothing and
// imports nothing of fnhost. The mime database (mime-types, with type-is and accepts that need it)
// costs ≈ 8.5 ms and 4.6 MiB to load, so it loads the first time a handler needs it; the rest
// (≈ 37 kB) on the first call that uses it.

// Structural types for what the runtime calls (the packages ship no TypeScript types).
export interface HttpParts {
  contentDisposition: { create(filename?: string, options?: { type?: string; fallback?: string | boolean }): string };
  contentType: {
    parse(value: string | { headers: Record<string, unknown> }): { type: string; parameters: Record<string, string> };
    format(value: { type: string; parameters?: Record<string, string> }): string;
  };
  cookie: {
    parse(header: string, options?: { decode?: (s: string) => string }): Record<string, string | undefined>;
    serialize(name: string, value: string, options?: Record<string, unknown>): string;
  };
  encodeUrl(url: string): string;
  escapeHtml(text: string): string;
  etag(entity: string | Uint8Array, options?: { weak?: boolean }): string;
  fresh(requestHeaders: Record<string, unknown>, responseHeaders: Record<string, unknown>): boolean;
  rangeParser(size: number, header: string, options?: { combine?: boolean }): -1 | -2 | (Array<{ start: number; end: number }> & { type: string });
  statuses: { message: Record<number, string | undefined> };
  vary(res: { getHeader(name: string): unknown; setHeader(name: string, value: string): unknown }, field: string | string[]): void;
}

export interface MimeParts {
  accepts(req: { headers: Record<string, unknown> }): {
    types(...types: Array<string | string[]>): string | string[] | false;
    encodings(...encodings: Array<string | string[]>): string | string[] | false;
    charsets(...charsets: Array<string | string[]>): string | string[] | false;
    languages(...languages: Array<string | string[]>): string | string[] | false;
  };
  mimeTypes: { contentType(typeOrExtension: string): string | false; lookup(pathOrExtension: string): string | false };
  typeIs: ((req: { headers: Record<string, unknown> }, types: string[]) => string | false | null) & {
    is(mediaType: string, types: string[]): string | false;
    normalize(type: string): string | false;
  };
}

const require = process.getBuiltinModule('node:module').createRequire(import.meta.url);

function load<T>(file: string): T {
  try {
    return require(`../vendor/${file}`) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
    throw new Error(`runtime-image/vendor/${file} is missing: the runtime's libraries are bundled at install (run \`make install\`, or \`node runtime-image/tools/bundle-libraries.mjs\`)`, { cause: err });
  }
}

let httpParts: HttpParts | undefined;
let mimeParts: MimeParts | undefined;

/** Everything but the mime database, loaded by the first call that needs it (not while the worker starts: its load counts against the function's time limit). */
export function http(): HttpParts {
  return (httpParts ??= load<HttpParts>('http-parts.cjs'));
}

/** mime-types, type-is and accepts, loaded on first use. */
export function mime(): MimeParts {
  return (mimeParts ??= load<MimeParts>('mime-parts.cjs'));
}

/**
 * What a handler's first call loads (these packages, and node:crypto under etag: ≈ 75 % of a
 * first call's own time, 10 ms of 13 on a quiet machine), loaded ahead by a spare worker while it
 * waits for its function (./spare-worker.ts): a start from a pool then answers its held call
 * without it. A function's own worker still loads them on first use, so the load never counts
 * against a start's time limit.
 */
export function preloadForFirstCall(): void {
  try {
    http().etag('');
  } catch {
    // Missing or broken: the first call that needs them says why.
  }
}
