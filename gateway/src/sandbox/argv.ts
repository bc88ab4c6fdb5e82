// The command line of one sandboxed runtime, as a pure function of what it is given (unit-tested
// in test/gateway/sandbox.unit.test.ts). Three layers, outermost first:
//   1. `sh -c 'echo $$ > …/cgroup.procs; exec "$@"'`: joins the runtime's cgroups (memory, pids)
//      before anything forks, so no process of the sandbox starts outside them (only when the
//      gateway runs as root on cgroup v1; left out otherwise);
//   2. `prlimit`: processes, open files, file size, no core dumps. RLIMIT_NPROC counts per real
//      uid, which is why each runtime runs under a uid of its own when the gateway is root;
//   3. `bwrap` (bubblewrap, the sandbox Flatpak uses): new user (when unprivileged), PID, network
//      (loopback only), IPC, UTS and cgroup namespaces; a mount view of the system read-only, the
//      runtime's code and the function's code read-only, a size-bounded private /tmp, and the two
//      sockets; nothing else of the machine or the data folder.
// Folders the gateway owns are passed as open file descriptors (--ro-bind-fd), never as paths:
// bwrap runs under the runtime's uid, which may not traverse the gateway's 0700 data folder.

/** Where things are inside every sandbox. */
export const SANDBOX_CODE_DIR = '/fn';
export const SANDBOX_RUN_DIR = '/run/fnhost';
export const SANDBOX_GATEWAY_DIR = '/run/fnhost-gateway';
export const RUNTIME_SOCKET_NAME = 'runtime.sock';
export const GATEWAY_SOCKET_NAME = 'gateway.sock';
/**
 * The uid and gid every runtime has inside its sandbox (its user namespace maps it to the
 * runtime's own uid outside). One value for all: Node's compile cache keeps a folder per uid,
 * so the cache the gateway fills serves every sandbox.
 */
export const SANDBOX_INSIDE_UID = 1000;
/** The host name inside every sandbox; also how the next gateway knows a stray sandbox of ours (strays.ts). */
export const SANDBOX_HOSTNAME = 'fnhost';

/** A top-level entry of the host's root that the sandbox sees: /usr read-only, /lib as the symlink it is on merged-/usr systems. */
export type SystemEntry = { path: string; symlink: string } | { path: string; symlink?: undefined };

/** System files a runtime needs: libraries and binaries (/usr, /lib*), CA certificates, time zones, name service files. */
export const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
export const SYSTEM_ETC = ['/etc/ssl', '/etc/ca-certificates', '/etc/localtime', '/etc/hosts', '/etc/nsswitch.conf', '/etc/passwd', '/etc/group', '/etc/alternatives'];

export interface BindFd {
  fd: number;
  dest: string;
  writable?: boolean;
}

export interface SandboxArgv {
  bwrap: string;
  prlimit: string;
  /** The host's system entries (lstat'ed once by the caller). */
  system: SystemEntry[];
  /** Folders and files of the gateway, each an open fd in the child (3 and up). */
  binds: BindFd[];
  /** Where bwrap writes its JSON info (child-pid): the pid namespace's init, whose one child is the runtime. */
  infoFd: number;
  tmpBytes: number;
  limits: { processes: number | undefined; openFiles: number; fileBytes: number };
  /** cgroup.procs files to join before exec (root on cgroup v1), empty otherwise. */
  cgroupProcs: string[];
  /** Without a cpu cgroup: run everything in the sandbox at this nice (cpu.ts RUNTIME_NICE), by the `nice` program at this path. */
  nice?: { path: string; value: number };
  /** The command inside: node and its arguments, paths as the sandbox sees them. */
  command: string[];
  cwd: string;
}

/** The whole argv (argv[0] is the program to spawn). */
export function sandboxArgv(o: SandboxArgv): string[] {
  const inside = String(SANDBOX_INSIDE_UID);
  const bwrap = [o.bwrap, '--die-with-parent', '--new-session', '--unshare-all', '--unshare-user', '--uid', inside, '--gid', inside, '--hostname', SANDBOX_HOSTNAME, '--cap-drop', 'ALL', '--info-fd', String(o.infoFd)];
  for (const entry of o.system) {
    if (entry.symlink !== undefined) bwrap.push('--symlink', entry.symlink, entry.path);
    else bwrap.push('--ro-bind', entry.path, entry.path);
  }
  bwrap.push('--proc', '/proc', '--dev', '/dev', '--size', String(o.tmpBytes), '--tmpfs', '/tmp');
  for (const b of o.binds) bwrap.push(b.writable ? '--bind-fd' : '--ro-bind-fd', String(b.fd), b.dest);
  // Last, once every mount point exists: the root and /dev are tmpfs mounts that bwrap makes writable
  // by the sandbox's uid, and unbounded: read-only, so /tmp is the one place to write (and its bound holds).
  bwrap.push('--remount-ro', '/dev', '--remount-ro', '/');
  bwrap.push('--chdir', o.cwd, '--', ...o.command);

  const prlimit = [o.prlimit, `--nofile=${o.limits.openFiles}`, `--fsize=${o.limits.fileBytes}`, '--core=0'];
  if (o.limits.processes !== undefined) prlimit.push(`--nproc=${o.limits.processes}`);
  prlimit.push('--');
  if (o.nice !== undefined) prlimit.unshift(o.nice.path, '-n', String(o.nice.value));

  if (o.cgroupProcs.length === 0) return [...prlimit, ...bwrap];
  const joins = o.cgroupProcs.map((_, i) => `echo $$ > "$${i + 1}"`).join(' && ');
  return ['/bin/sh', '-c', `${joins} && shift ${o.cgroupProcs.length} && exec "$@"`, 'fnhost-sandbox', ...o.cgroupProcs, ...prlimit, ...bwrap];
}
