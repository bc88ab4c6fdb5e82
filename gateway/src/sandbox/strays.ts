import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SANDBOX_HOSTNAME } from './argv.ts';

// Sandboxes a dead gateway left half-made (docs/sandbox.md "Strays"). bubblewrap starts a sandbox
// in two processes: the one the gateway spawns clones the sandbox's init into new namespaces and
// then writes its user-namespace maps, while the init waits for them (an eventfd read). Until that
// write the init has no parent-death signal of its own. A gateway killed in that window takes the
// outer bwrap with it (--die-with-parent), and the init waits forever: reparented to the host's
// init, PID 1 of its own namespace, with no child, under the runtime's uid. It runs no code of
// anybody's, but it holds a uid of the sandbox range, a PID namespace and (as root) a cgroup.
// Seen: one or two after every run of the integration suite, which kills gateways mid-start.
// The next gateway's start ends them.

/** What /proc says of one process, as much as deciding needs. */
export interface ProcessFacts {
  pid: number;
  comm: string;
  ppid: number;
  /** The NSpid line: the pid in each PID namespace, outermost first. */
  nspid: number[];
  argv: string[];
}

/**
 * A stray is the init of a sandbox of ours whose outer bubblewrap is gone: bwrap, reparented to
 * init (ppid 1), PID 1 of a namespace of its own, started with our sandbox's command line (its
 * hostname argument). A live sandbox's init has the outer bwrap as its parent, so it never matches.
 */
export function isStraySandboxInit(p: ProcessFacts): boolean {
  if (p.comm !== 'bwrap' || p.ppid !== 1) return false;
  if (p.nspid.length < 2 || p.nspid[p.nspid.length - 1] !== 1) return false;
  const at = p.argv.indexOf('--hostname');
  return at >= 0 && p.argv[at + 1] === SANDBOX_HOSTNAME && p.argv.includes('--info-fd');
}

/** Parses /proc/<pid>/status's PPid and NSpid lines (undefined when either is missing). */
export function parseStatus(status: string): { ppid: number; nspid: number[] } | undefined {
  const ppid = /^PPid:\s*(\d+)$/m.exec(status);
  const nspid = /^NSpid:\s*([\d\s]+)$/m.exec(status);
  if (ppid === null || nspid === null) return undefined;
  return { ppid: Number(ppid[1]), nspid: nspid[1]!.trim().split(/\s+/).map(Number) };
}

async function factsOf(procRoot: string, pid: number): Promise<ProcessFacts | undefined> {
  try {
    const comm = (await readFile(join(procRoot, String(pid), 'comm'), 'utf8')).trim();
    // Most processes are not bwrap: read no more of them.
    if (comm !== 'bwrap') return undefined;
    const status = parseStatus(await readFile(join(procRoot, String(pid), 'status'), 'utf8'));
    if (status === undefined) return undefined;
    const argv = (await readFile(join(procRoot, String(pid), 'cmdline'), 'utf8')).split('\0').filter((a) => a !== '');
    return { pid, comm, ...status, argv };
  } catch {
    return undefined; // gone meanwhile, or not ours to read
  }
}

/**
 * SIGKILLs every stray sandbox init on the machine and returns their pids. Ending one ends its
 * PID namespace, which has nothing else in it. A stray of another user's gateway is refused by
 * the kernel (EPERM) and left alone.
 */
export async function endStraySandboxes(procRoot = '/proc', kill: (pid: number) => void = (pid) => process.kill(pid, 'SIGKILL')): Promise<number[]> {
  const ended: number[] = [];
  for (const name of await readdir(procRoot).catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const facts = await factsOf(procRoot, Number(name));
    if (facts === undefined || !isStraySandboxInit(facts)) continue;
    try {
      kill(facts.pid);
      ended.push(facts.pid);
    } catch {
      // gone, or not ours
    }
  }
  return ended;
}
