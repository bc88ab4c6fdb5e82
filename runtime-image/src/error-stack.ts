// The stack of an error a handler threw, as its owner reads it in the execution log: the frames in
// the function's own files, their paths relative to the function's folder. A bundle made by the
// fnhost CLI carries an inline source map, and the worker turns Node's source map support on
// before it loads the module, so those frames already name the user's files and lines
// (src/handler.ts:20:9) rather than the bundle's. The runtime's own frames and Node's internals are
// left out: they say nothing about the user's code, and they would name this machine's paths.

/**
 * The most of a stack x-fnhost-error-stack carries, URI-encoded (the header's length): with
 * x-fnhost-error's at most 1,024 characters it stays far below the 16 KiB of headers the gateway
 * reads. Cut at a frame, never inside one.
 */
export const MAX_ERROR_STACK_ENCODED = 4096;

const FRAME = /^\s+at /;

/**
 * The frames of `err`'s stack that are in the function's folder, paths made relative; undefined
 * when there is none. `moduleFiles`: the module's path and its real path (in a pod the module is a
 * ConfigMap file, a symlink into a `..<timestamp>` folder, and Node names the real one).
 */
export function ownerStack(err: unknown, moduleFiles: readonly string[], lazyMap?: { mapFrame(frame: string): string }): string | undefined {
  const stack = (err as { stack?: unknown } | null)?.stack;
  if (typeof stack !== 'string') return undefined;
  const prefixes = ownerPrefixes(moduleFiles);
  const frames: string[] = [];
  let encoded = 0;
  for (const line of stack.split('\n')) {
    if (!FRAME.test(line)) continue;
    const own = ownerFrame(line.trim(), prefixes);
    if (own === undefined) continue;
    // A large bundle's map is read here, not by Node (./lazy-source-map.ts).
    const frame = lazyMap === undefined ? own : lazyMap.mapFrame(own);
    const size = encodeURIComponent(frame).length + (frames.length === 0 ? 0 : 3);
    if (encoded + size > MAX_ERROR_STACK_ENCODED) break;
    frames.push(frame);
    encoded += size;
  }
  return frames.length === 0 ? undefined : frames.join('\n');
}

/** What an own frame's paths are made into: the module itself `<module>`, its folder nothing (longest first). */
export function ownerPrefixes(moduleFiles: readonly string[]): Array<[string, string]> {
  const prefixes: Array<[string, string]> = [];
  for (const file of new Set(moduleFiles)) {
    const dir = file.slice(0, file.lastIndexOf('/') + 1);
    prefixes.push([new URL(`file://${file}`).href, '<module>'], [file, '<module>'], [new URL(`file://${dir}`).href, ''], [dir, '']);
  }
  return prefixes.sort((a, b) => b[0].length - a[0].length);
}

/** A frame in the function's folder with its paths made relative; undefined for another's (the runtime's, Node's). */
function ownerFrame(frame: string, prefixes: ReadonlyArray<[string, string]>): string | undefined {
  let own = false;
  for (const [prefix, replacement] of prefixes) {
    if (!frame.includes(prefix)) continue;
    own = true;
    frame = frame.split(prefix).join(replacement);
  }
  return own ? frame : undefined;
}

/**
 * Console text as its owner reads it in the record (`console.error(err)` prints a stack): stack
 * frames outside the function's folder (the runtime's own files, Node's internals, with this
 * machine's paths) are left out, the function's own made relative, as ownerStack does for a
 * thrown error. Lines that are not frames are kept as written.
 */
export function ownerConsoleText(text: string, prefixes: ReadonlyArray<[string, string]>): string {
  if (!text.includes('    at ')) return text;
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (!FRAME.test(line)) {
      out.push(line);
      continue;
    }
    const frame = ownerFrame(line, prefixes);
    if (frame !== undefined) out.push(frame);
  }
  return out.join('\n');
}
