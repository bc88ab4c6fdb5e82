// Not an ES import of node:fs (see hide-secrets.ts): its namespace's `promises` getter loads
// fs/promises with readline, os and fs watchers into every runtime (≈ 0.9 MiB idle RSS).
const { closeSync, fstatSync, openSync, readSync } = process.getBuiltinModule('node:fs');

// A large bundle's inline source map, read only when a stack needs it and never decoded whole.
// Node's own support (module.setSourceMapsSupport) decodes every mapping of a map into arrays at
// the first stack: measured for a 5 MiB bundle (2.7 MiB of map) +45 MiB of heap, and for a 14 MiB
// one (7.5 MiB of map) past the default 128 MiB worker heap, so the worker died at the handler's
// first thrown error. Past LARGE_MAP_BYTES the worker leaves Node's support off and maps the
// frames of a stack here: the map's `mappings` text is kept (a string as long as it) and scanned
// for each frame asked, remembering answers.

/** Maps larger than this are read lazily here (Node's support takes smaller ones). */
export const LARGE_MAP_BYTES = 1024 * 1024;

const MARKER = Buffer.from('\n//# sourceMappingURL=data:application/json;base64,');
const CHUNK = 1024 * 1024;

/** The offset of the inline source map comment's data in the file, and the file's size; null when none. */
export function inlineMapOffset(file: string): { at: number; size: number } | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    // No larger than the file: a hello handler's load does not allocate a MiB it never fills.
    const buf = Buffer.alloc(Math.min(size, CHUNK) + MARKER.length);
    // From the end back: the comment is the file's last line, its data base64 (no newline in it).
    for (let end = size; end > 0; end -= CHUNK) {
      const start = Math.max(0, end - CHUNK);
      const n = readSync(fd, buf, 0, Math.min(buf.length, size - start), start);
      const found = buf.subarray(0, n).lastIndexOf(MARKER);
      if (found >= 0) return { at: start + found + MARKER.length, size };
    }
    return null;
  } finally {
    closeSync(fd);
  }
}

/** Whether the module's inline map is large enough to be read here rather than by Node. */
export function hasLargeInlineMap(file: string): boolean {
  const found = inlineMapOffset(file);
  return found !== null && found.size - found.at > LARGE_MAP_BYTES;
}

const B64 = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;

/**
 * The original place of generated (line, column) (1-based line, 1-based column as V8 prints
 * them) in a source map's `mappings`: the last segment at or before it, as Node's findEntry.
 */
export function lookup(mappings: string, sources: readonly string[], line: number, column: number): { source: string; line: number; column: number } | undefined {
  let genLine = 1;
  let genCol = 0;
  let src = 0;
  let origLine = 0;
  let origCol = 0;
  let best: { source: string; line: number; column: number } | undefined;
  const want = column - 1;
  let i = 0;
  const n = mappings.length;
  const fields = [0, 0, 0, 0, 0];
  while (i < n) {
    const c = mappings.charCodeAt(i);
    if (c === 59 /* ; */) {
      if (genLine === line) return best;
      genLine++;
      genCol = 0;
      i++;
      continue;
    }
    if (c === 44 /* , */) {
      i++;
      continue;
    }
    // One segment: 1, 4 or 5 VLQ fields.
    let k = 0;
    while (i < n && mappings.charCodeAt(i) !== 44 && mappings.charCodeAt(i) !== 59) {
      let value = 0;
      let shift = 0;
      let digit: number;
      do {
        digit = B64[mappings.charCodeAt(i++)]!;
        value += (digit & 31) << shift;
        shift += 5;
      } while (digit & 32);
      fields[k++] = value & 1 ? -(value >>> 1) : value >>> 1;
    }
    genCol += fields[0]!;
    if (k >= 4) {
      src += fields[1]!;
      origLine += fields[2]!;
      origCol += fields[3]!;
    }
    // The last segment at or before the place, on this line or an earlier one (as Node's findEntry).
    if (genLine === line && genCol > want) return best;
    best = k >= 4 ? { source: sources[src] ?? '?', line: origLine + 1, column: origCol + 1 } : undefined;
  }
  return best;
}

/** A module's inline map, read at its first use; frames `<module>:L:C` mapped to `source:line:column`. */
export class LazySourceMap {
  readonly #file: string;
  #map: { mappings: string; sources: string[] } | null | undefined;
  readonly #answers = new Map<string, string>();

  constructor(file: string) {
    this.#file = file;
  }

  #load(): { mappings: string; sources: string[] } | null {
    if (this.#map !== undefined) return this.#map;
    this.#map = null;
    const found = inlineMapOffset(this.#file);
    if (found === null) return null;
    const fd = openSync(this.#file, 'r');
    try {
      const data = Buffer.alloc(found.size - found.at);
      readSync(fd, data, 0, data.length, found.at);
      const parsed = JSON.parse(Buffer.from(data.toString('latin1').trim(), 'base64').toString('utf8')) as { mappings?: unknown; sources?: unknown };
      if (typeof parsed.mappings === 'string' && Array.isArray(parsed.sources)) this.#map = { mappings: parsed.mappings, sources: parsed.sources.map(String) };
    } catch {
      // A map that cannot be read: frames stay as the bundle's.
    } finally {
      closeSync(fd);
    }
    return this.#map;
  }

  /** The frame with its `<module>:L:C` places mapped (as Node's support would name them, relative). */
  mapFrame(frame: string): string {
    return frame.replace(/<module>:(\d+):(\d+)/g, (whole, l: string, c: string) => {
      const key = `${l}:${c}`;
      let answer = this.#answers.get(key);
      if (answer === undefined) {
        const map = this.#load();
        const found = map === null ? undefined : lookup(map.mappings, map.sources, Number(l), Number(c));
        answer = found === undefined ? whole : `${found.source}:${found.line}:${found.column}`;
        if (this.#answers.size < 1000) this.#answers.set(key, answer);
      }
      return answer;
    });
  }
}
