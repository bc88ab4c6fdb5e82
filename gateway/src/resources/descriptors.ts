import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { FnhostError } from '@fnhost/core';

// The gateway's file descriptors (issue 27): every connection, store file,
// sandbox pipe, runtime socket and panel request takes one, and running out
// (EMFILE) fails every call of every function. Two steps at start:
//
//  1. As root, raise the hard RLIMIT_NOFILE to FNHOST_NOFILE (default 65536).
//     Node has no setrlimit; it raises the soft limit to the hard one itself at
//     start, so only the hard one needs raising, and a process may raise its own
//     hard limit only with CAP_SYS_RESOURCE. `prlimit --pid <self>` (util-linux,
//     which the sandbox already requires) is that setrlimit from outside: one
//     spawn at start. A systemd unit's LimitNOFILE= or a container runtime's
//     ulimit does the same before the start and is read as given (never lowered).
//  2. Split what there is: a reserve (FNHOST_FD_RESERVE) for the gateway's own
//     work that callers can never take, and the rest for the listeners'
//     connection bounds (../http/connection-bounds.ts).

export interface NofileLimits {
  soft: number;
  hard: number;
}

export class DescriptorLimitError extends FnhostError {
  constructor(message: string) {
    super('descriptor_limit', 500, message, { expose: true });
  }
}

/** The "Max open files" line of /proc/<pid>/limits (pure); "unlimited" reads as Infinity. */
export function parseNofile(limitsText: string): NofileLimits {
  const line = limitsText.split('\n').find((l) => l.startsWith('Max open files'));
  const m = line === undefined ? null : /^Max open files\s+(\S+)\s+(\S+)/.exec(line);
  if (m === null) throw new DescriptorLimitError('no "Max open files" line in /proc/self/limits');
  const num = (v: string) => (v === 'unlimited' ? Infinity : Number(v));
  return { soft: num(m[1]!), hard: num(m[2]!) };
}

export function readNofile(path = '/proc/self/limits'): NofileLimits {
  return parseNofile(readFileSync(path, 'utf8'));
}

/** What to do at start (pure): raise to `target` when below it and allowed to; never lower a limit. */
export function nofilePlan(current: NofileLimits, target: number, isRoot: boolean): { raiseTo: number } | { keep: string } {
  if (target === 0) return { keep: 'FNHOST_NOFILE=0: the limits are used as given' };
  if (current.hard >= target) return current.soft >= target ? { keep: 'already at or above FNHOST_NOFILE' } : { raiseTo: Math.max(target, current.soft) };
  if (!isRoot) return { keep: `not root: the hard limit (${current.hard}) cannot be raised; set LimitNOFILE= in the systemd unit or ulimit -n before the start` };
  return { raiseTo: target };
}

/**
 * Raises this process's RLIMIT_NOFILE (soft and hard) to FNHOST_NOFILE where it may, and
 * returns the limits in force afterwards and what was done. A failure to raise is not fatal:
 * the gateway runs with what it has, and its bounds are derived from that.
 */
export function raiseNofile(target: number, options: { isRoot?: boolean; prlimit?: string; pid?: number; limitsPath?: string } = {}): { limits: NofileLimits; note: string } {
  const before = readNofile(options.limitsPath);
  const plan = nofilePlan(before, target, options.isRoot ?? process.getuid?.() === 0);
  if ('keep' in plan) return { limits: before, note: plan.keep };
  const n = plan.raiseTo;
  const run = spawnSync(options.prlimit ?? 'prlimit', ['--pid', String(options.pid ?? process.pid), `--nofile=${n}:${n}`], { encoding: 'utf8', timeout: 5_000 });
  if (run.error !== undefined || run.status !== 0) {
    return { limits: before, note: `raising RLIMIT_NOFILE to ${n} with prlimit failed (${run.error?.message ?? run.stderr.trim().slice(0, 200)}); running with ${before.soft}` };
  }
  return { limits: readNofile(options.limitsPath), note: `raised RLIMIT_NOFILE from ${before.soft}:${before.hard} to ${n}:${n}` };
}
