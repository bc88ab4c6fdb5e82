import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

// Deadlines on a child process's own progress instead of the wall clock (issue 30, "make
// test holds on a busy machine"). On a 2-core machine shared with busy loops and other
// work, starting a gateway takes 1-2 s quiet and 15-20 s at load average 20: the same CPU
// work, spread over more wall time. A test waiting for a process to get somewhere fails
// it when the process is stuck (used no CPU for a while: waiting on something that will
// not come) or spinning (used far more CPU than the step needs), never because the
// machine gave it a small share.

/** utime + stime + cutime + cstime in clock ticks, from the text of /proc/<pid>/stat (the comm may hold spaces and parentheses). */
export function cpuTicksOfStat(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime, stime, cutime, cstime are fields 14-17.
  const ticks = fields.slice(11, 15).map(Number);
  if (ticks.length !== 4 || ticks.some((t) => !Number.isFinite(t))) throw new Error(`not a /proc/<pid>/stat line: ${stat.slice(0, 120)}`);
  return ticks.reduce((a, b) => a + b, 0);
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100; // USER_HZ on every Linux architecture Node runs on
    }
  }
  return ticksPerSecond;
}

/** The CPU time (ms) the process and its waited-for children used; undefined once it is gone. */
export function processCpuMs(pid: number): number | undefined {
  try {
    return (cpuTicksOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8')) * 1000) / clockTicks();
  } catch {
    return undefined;
  }
}

export interface ProgressBounds {
  /** Fail once the process used this much CPU without getting there (it spins). */
  cpuMs: number;
  /** Fail once the process used no CPU for this long (it waits on something that does not come). */
  stallMs: number;
  /** A wall-clock ceiling all the same, far above what a loaded machine needs. */
  ceilingMs: number;
}

/** What is wrong with a process that has not got there yet, or undefined while it still progresses. */
export function progressVerdict(bounds: ProgressBounds, elapsedMs: number, cpuMs: number, sinceCpuMovedMs: number): string | undefined {
  if (cpuMs >= bounds.cpuMs) return `used ${Math.round(cpuMs)} ms of CPU (bound ${bounds.cpuMs})`;
  if (sinceCpuMovedMs >= bounds.stallMs) return `used no CPU for ${Math.round(sinceCpuMovedMs)} ms (bound ${bounds.stallMs}; ${Math.round(cpuMs)} ms of CPU in ${Math.round(elapsedMs)} ms)`;
  if (elapsedMs >= bounds.ceilingMs) return `took ${Math.round(elapsedMs)} ms (ceiling ${bounds.ceilingMs}; ${Math.round(cpuMs)} ms of CPU)`;
  return undefined;
}

/**
 * Watches a process until stop(): calls `onStuck` with the reason once progressVerdict
 * finds one (sampled every 250 ms).
 */
export function watchProgress(pid: number, bounds: ProgressBounds, onStuck: (reason: string) => void): { stop(): void } {
  const started = performance.now();
  let lastCpu = processCpuMs(pid) ?? 0;
  let movedAt = started;
  const timer = setInterval(() => {
    const now = performance.now();
    const cpu = processCpuMs(pid);
    if (cpu === undefined) return; // gone: the caller learns it from the exit
    if (cpu > lastCpu) {
      lastCpu = cpu;
      movedAt = now;
    }
    const reason = progressVerdict(bounds, now - started, cpu, now - movedAt);
    if (reason !== undefined) {
      clearInterval(timer);
      onStuck(reason);
    }
  }, 250);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
