// Not an ES import of node:fs: its namespace is built from every export, and the `promises` getter
// loads fs/promises with readline, os and fs watchers (≈ 1 MiB of a hello runtime; docs/runtime.md "Memory").
const { closeSync, openSync, readFileSync, readSync, writeSync } = process.getBuiltinModule('node:fs');

// The runtime's credentials (FNHOST_RUNTIME_TOKEN; a generic runtime's
// FNHOST_SPECIALIZE_TOKEN) come in its environment: a Kubernetes pod gets its
// runtime token from a Secret as a variable, since a file in the pod would be
// readable by the handler, which runs as the same uid (docs/install.md). Once
// the runtime has read them they leave the environment, in two places:
//
// - the process's environment (unsetenv, through `delete process.env.X`), which
//   a process started later inherits;
// - the copy the kernel shows as /proc/<pid>/environ: not the environment but
//   the bytes the process was started with, between mm->env_start and
//   env_end of its own memory, which unsetenv never touches. A handler reads it
//   with fs (/proc/self/environ from its worker thread) or from a child
//   (/proc/<ppid>/environ; /proc/1/environ in a pod, where the runtime is PID 1).
//   Those bytes are overwritten in place through /proc/self/mem, which a process
//   may always write for itself (the trick setproctitle plays on argv). Nothing
//   refers to them once unsetenv has dropped the entry from `environ`.
//
// What stays is the token in the runtime's memory, which it needs (the KV and
// console calls, the egress proxy's credential) and which the handler, running
// in the same process, uses through the runtime anyway.

/** The byte ranges of `NAME=value` values to blank in an environ block (NUL-separated entries). */
export function secretRanges(block: Buffer, names: readonly string[]): Array<{ offset: number; length: number }> {
  const ranges: Array<{ offset: number; length: number }> = [];
  let start = 0;
  while (start < block.length) {
    let end = block.indexOf(0, start);
    if (end === -1) end = block.length;
    for (const name of names) {
      const prefix = Buffer.from(`${name}=`, 'latin1');
      if (end - start >= prefix.length && block.subarray(start, start + prefix.length).equals(prefix)) {
        ranges.push({ offset: start + prefix.length, length: end - start - prefix.length });
      }
    }
    start = end + 1;
  }
  return ranges;
}

/** env_start and env_end from the text of /proc/<pid>/stat (fields 50 and 51, proc(5)); undefined on a kernel that has none. */
export function environBounds(stat: string): { start: number; end: number } | undefined {
  // Field 2 (comm) is in parentheses and may hold spaces: count from after its closing one (field 3).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).trim().split(' ');
  const start = Number(fields[50 - 3]);
  const end = Number(fields[51 - 3]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start <= 0 || end <= start) return undefined;
  return { start, end };
}

export class SecretScrubError extends Error {
  override name = 'SecretScrubError';
}

/**
 * Removes `names` from the process environment and blanks their values in the initial
 * environment (/proc/self/environ). Returns how many values were blanked; throws
 * SecretScrubError when /proc cannot be read or written (the caller says so).
 */
export function hideSecrets(names: readonly string[], proc = '/proc/self'): number {
  for (const name of names) delete process.env[name];
  let fd: number | undefined;
  try {
    const bounds = environBounds(readFileSync(`${proc}/stat`, 'latin1'));
    if (bounds === undefined) throw new SecretScrubError(`${proc}/stat gives no env_start/env_end`);
    const block = Buffer.alloc(bounds.end - bounds.start);
    fd = openSync(`${proc}/mem`, 'r+');
    readSync(fd, block, 0, block.length, bounds.start);
    const ranges = secretRanges(block, names);
    for (const r of ranges) writeSync(fd, Buffer.alloc(r.length), 0, r.length, bounds.start + r.offset);
    return ranges.length;
  } catch (err) {
    if (err instanceof SecretScrubError) throw err;
    throw new SecretScrubError(`cannot blank the initial environment through ${proc}/mem: ${(err as Error).message}`, { cause: err });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The gateway's stdin message (gateway/src/executor/secrets-pipe.ts): `NAME=value` lines, then an empty line. */
export const SECRETS_ON_STDIN = 'FNHOST_SECRETS_ON_STDIN';
const MAX_SECRETS_BYTES = 4096;

/** Parses the message; throws SecretScrubError naming what is wrong (never a value). */
export function parseSecretLines(text: string, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const eq = line.indexOf('=');
    const name = eq <= 0 ? line.slice(0, 40) : line.slice(0, eq);
    if (eq <= 0 || !allowed.includes(name)) throw new SecretScrubError(`stdin: "${name}" is not a credential the runtime takes (${allowed.join(', ')})`);
    out[name] = line.slice(eq + 1);
  }
  return out;
}

/**
 * Reads the credentials the gateway writes on stdin, up to the empty line that ends them
 * (at most MAX_SECRETS_BYTES, within `timeoutMs`). Synchronous: nothing else runs before them.
 */
export function readSecretLines(fd: number, allowed: readonly string[], timeoutMs = 10_000): Record<string, string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const deadline = Date.now() + timeoutMs;
  const one = Buffer.alloc(1);
  // A byte at a time: what follows the message on stdin (nothing, then its end) belongs to the runtime's watcher.
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, one, 0, 1, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() > deadline) throw new SecretScrubError(`reading credentials from stdin: ${(err as Error).message}`, { cause: err });
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
      continue;
    }
    if (n === 0) throw new SecretScrubError('stdin ended before the credentials did');
    chunks.push(Buffer.from(one));
    size++;
    if (size >= 2 && one[0] === 0x0a && chunks[size - 2]![0] === 0x0a) break;
    if (size === 1 && one[0] === 0x0a) break;
    if (size > MAX_SECRETS_BYTES) throw new SecretScrubError(`the credentials on stdin are longer than ${MAX_SECRETS_BYTES} bytes`);
  }
  return parseSecretLines(Buffer.concat(chunks).toString('latin1'), allowed);
}
