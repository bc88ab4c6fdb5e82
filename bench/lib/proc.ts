import { readdirSync, readFileSync } from 'node:fs';

// What /proc says of the processes a bench measures (Linux only).

/** The fields of /proc/<pid>/stat after the command name, which may hold spaces and parentheses. */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** A process and its descendants (a gateway, bubblewrap, each sandbox's init, each runtime: host pids). */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const ppid = Number(statFields(Number(name))[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** CPU time (user + system, µs) these processes have used so far; those gone count nothing, NaN when none could be read. */
export function cpuMicros(pids: readonly number[]): number {
  let us = 0;
  let read = 0;
  for (const pid of pids) {
    try {
      const fields = statFields(pid);
      us += ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100; // utime, stime; USER_HZ is 100 on Linux
      read++;
    } catch {
      // gone
    }
  }
  return read === 0 ? Number.NaN : us;
}
