import { readFileSync } from 'node:fs';

// A runtime's start is bounded by its own progress, not by the wall clock (issue 30, "make
// test holds on a busy machine"). On 2 cores shared with other work a runtime that starts in
// 50 ms on a quiet machine took over 15 s of wall time at load average 26: the same CPU work
// spread over more time. A fixed 15 s deadline then failed it, and the executor's one-second
// fail-fast window after a failed start turned each failure into many 502s for its callers.
// A start is failed when its process tree used no CPU for the start timeout (it waits on
// something that will not come: the old deadline's meaning on a quiet machine) or, whatever
// it does, past a ceiling far above what a loaded machine needs.

export interface StartBounds {
  /** Fail once the process tree used no CPU for this long. */
  stallMs: number;
  /** Fail past this much wall time all the same. */
  ceilingMs: number;
}

/** The bounds for a start timeout: a stall of the timeout, a ceiling of four times it (at least a minute). */
export function startBoundsOf(startTimeoutMs: number): StartBounds {
  return { stallMs: startTimeoutMs, ceilingMs: Math.max(4 * startTimeoutMs, 60_000) };
}

/** Why a start that has not finished must end now, or undefined while it still progresses. */
export function startVerdict(bounds: StartBounds, elapsedMs: number, sinceCpuMovedMs: number, cpuMs: number | undefined): string | undefined {
  if (elapsedMs >= bounds.ceilingMs) return `did not start within ${bounds.ceilingMs} ms (${cpuMs === undefined ? 'its CPU time unknown' : `${Math.round(cpuMs)} ms of CPU`})`;
  if (sinceCpuMovedMs >= bounds.stallMs) return `did not start: it used no CPU for ${Math.round(sinceCpuMovedMs)} ms (bound ${bounds.stallMs} ms)`;
  return undefined;
}

/** utime + stime of one /proc/<pid>/stat line, in clock ticks (the command name may hold spaces and parentheses). */
export function cpuTicksOfStat(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`not a /proc/<pid>/stat line: ${stat.slice(0, 120)}`);
  return utime + stime;
}

// USER_HZ: 100 on every Linux architecture Node runs on.
const TICK_MS = 10;

/**
 * CPU time (ms) of a process and every descendant alive now (a sandbox's bubblewrap, its
 * init and the runtime under it), or undefined when the process is gone or the kernel does
 * not list children (/proc/<pid>/task/<tid>/children). Bounded: at most 64 processes.
 */
export function treeCpuMs(rootPid: number): number | undefined {
  let ticks = 0;
  const pending = [rootPid];
  let seen = 0;
  try {
    while (pending.length > 0 && seen < 64) {
      const pid = pending.pop()!;
      seen++;
      ticks += cpuTicksOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
      if (children !== '') pending.push(...children.split(' ').map(Number));
    }
  } catch {
    // The root gone, or no children file: unknown. A descendant that ended between two reads is
    // counted in neither, and the next sample sees the tree as it is.
    if (seen === 0 || ticks === 0) return undefined;
  }
  return ticks * TICK_MS;
}

/**
 * Watches a starting process tree until stop(): calls onStuck once with startVerdict's reason.
 * Where its CPU time cannot be read, the stall bound counts from the start (the wall-clock
 * deadline this replaced).
 */
export function watchStart(rootPid: number | undefined, bounds: StartBounds, onStuck: (reason: string) => void, sampleMs = 250): { stop(): void } {
  const started = performance.now();
  let lastCpu = rootPid === undefined ? undefined : treeCpuMs(rootPid);
  let movedAt = started;
  const timer = setInterval(() => {
    const now = performance.now();
    const cpu = rootPid === undefined ? undefined : treeCpuMs(rootPid);
    if (cpu !== undefined && (lastCpu === undefined || cpu > lastCpu)) {
      lastCpu = cpu;
      movedAt = now;
    }
    const reason = startVerdict(bounds, now - started, now - movedAt, lastCpu);
    if (reason !== undefined) {
      clearInterval(timer);
      onStuck(reason);
    }
  }, Math.min(sampleMs, bounds.stallMs));
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
