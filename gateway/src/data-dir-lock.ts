import { open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { FnhostError } from '@fnhost/core';
import { isRunning } from './pid.ts';

// One gateway per data folder. The folder holds the SQLite file, the admin
// token and the pid files of the runtimes a gateway started; a second gateway
// on it would take the first one's runtimes for orphans and end them (it did:
// a second `make start` broke the first one's calls in flight). So the first
// thing a gateway does is take DATA_DIR/gateway.lock, created exclusively; a
// lock whose gateway is gone (killed: no clean exit removed it) is taken over,
// and only then are that gateway's runtimes cleaned up.
//
// A holder is alive when its pid runs and, where /proc shows it, its process
// started when the lock says (a reused pid is not the holder). A stale lock
// is renamed aside before the exclusive create is tried again; if what was
// renamed turns out to be another starter's fresh lock (two gateways started
// in the same instant on a stale one), it is put back and this one refuses.

export interface LockHolder {
  pid: number;
  /** /proc start time of the holder (clock ticks since boot), when /proc exists. */
  started: string | null;
  /** Where it serves, once it listens. */
  url: string | null;
  since: string;
}

export class DataDirInUseError extends FnhostError {
  constructor(dataDir: string, holder: LockHolder) {
    const where = holder.url === null ? 'still starting' : `serving ${holder.url}`;
    super('data_dir_in_use', 500, `another fnhost gateway (pid ${holder.pid}, ${where}) is using the data folder ${dataDir}: stop it first, or give this one another FNHOST_DATA_DIR. Nothing of the running gateway was touched.`, { expose: true });
  }
}

/** The start time of a process as /proc/<pid>/stat gives it (field 22), or null without /proc. */
export async function processStartTime(pid: number): Promise<string | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  // The command name (field 2) may hold spaces and parentheses: count from its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? null;
}

/** Pure: is the holder described by `lock` the process that runs now as its pid? */
export function holderAlive(lock: LockHolder, running: boolean, startedNow: string | null): boolean {
  if (!running) return false;
  if (lock.started !== null && startedNow !== null) return lock.started === startedNow;
  return true;
}

function parseLock(text: string): LockHolder | null {
  try {
    const v = JSON.parse(text) as Partial<LockHolder>;
    if (typeof v.pid !== 'number' || !Number.isInteger(v.pid) || v.pid <= 0) return null;
    return { pid: v.pid, started: typeof v.started === 'string' ? v.started : null, url: typeof v.url === 'string' ? v.url : null, since: typeof v.since === 'string' ? v.since : '' };
  } catch {
    return null;
  }
}


export interface DataDirLock {
  readonly path: string;
  /** Records where this gateway serves, for the message a second one prints. */
  setUrl(url: string): Promise<void>;
  /** Removes the lock if it is still this process's. */
  release(): Promise<void>;
}

export async function lockDataDir(dataDir: string, pid = process.pid): Promise<DataDirLock> {
  const path = join(dataDir, 'gateway.lock');
  const me: LockHolder = { pid, started: await processStartTime(pid), url: null, since: new Date().toISOString() };
  for (let attempt = 0; ; attempt++) {
    try {
      const file = await open(path, 'wx', 0o600);
      try {
        await file.writeFile(JSON.stringify(me));
      } finally {
        await file.close();
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw err;
    }
    const text = await readFile(path, 'utf8').catch(() => '');
    const holder = parseLock(text);
    if (holder !== null && holderAlive(holder, isRunning(holder.pid), await processStartTime(holder.pid))) throw new DataDirInUseError(dataDir, holder);
    // Stale (its gateway was killed) or unreadable: move it aside, then try the exclusive create again.
    const aside = `${path}.stale-${pid}`;
    if (!(await rename(path, aside).then(() => true, () => false))) continue;
    const moved = await readFile(aside, 'utf8').catch(() => '');
    if (moved !== text) {
      await rename(aside, path);
      const other = parseLock(moved);
      if (other !== null) throw new DataDirInUseError(dataDir, other);
    }
    await rm(aside, { force: true });
  }
  const ours = async () => parseLock(await readFile(path, 'utf8').catch(() => ''))?.pid === pid;
  return {
    path,
    async setUrl(url) {
      if (!(await ours())) return;
      me.url = url;
      const tmp = `${path}.${pid}.tmp`;
      const file = await open(tmp, 'w', 0o600);
      try {
        await file.writeFile(JSON.stringify(me));
      } finally {
        await file.close();
      }
      await rename(tmp, path);
    },
    async release() {
      if (await ours()) await rm(path, { force: true });
    },
  };
}
