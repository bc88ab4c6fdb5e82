import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { millicores } from '@fnhost/core/scaling.ts';

// CPU of each sandbox (docs/sandbox.md "CPU"): the pure mapping from a function's CPU setting to
// the cgroup files of cgroup v1 (cpu.shares, cpu.cfs_quota_us/cpu.cfs_period_us) and v2
// (cpu.weight, cpu.max), and the thin writer of those files. The units follow Kubernetes, whose
// `resources.requests/limits.cpu` is what a function's `cpu` means in cluster mode (spec.cpu), so a
// function gets the same share and ceiling on one machine as in a pod:
//   - request (millicores) -> shares = millicores * 1024 / 1000 (kubelet's MilliCPUToShares), at
//     least 2; no request -> 1024, one CPU's weight, the cgroup default: every function weighs the same;
//   - limit (millicores) -> quota = millicores * period / 1000 per 100 ms period (MilliCPUToQuota),
//     at least 1 ms; no limit -> no quota (the function may use idle CPU; under contention the
//     weights decide);
//   - v2's weight from shares as the kernel and runc convert it: 1 + (shares - 2) * 9999 / 262142.

export const CPU_PERIOD_US = 100_000;
export const MIN_SHARES = 2;
export const MAX_SHARES = 262_144;
export const DEFAULT_SHARES = 1024;
export const MIN_QUOTA_US = 1_000;
/**
 * The sandboxes' parent group (fnhost-<gateway pid>) weighs half a gateway: the gateway stays in
 * the cgroup it was started in, where its weight is the default 1024 (its process, or its session's
 * autogroup), and every runtime together competes as one entity of 512 against it, so under full
 * contention the gateway keeps at least two thirds of what it asks for. Inside the parent, each
 * function's weight is its own (DEFAULT_SHARES unless its `cpu.request` says).
 */
export const SANDBOXES_PARENT_SHARES = 512;

/**
 * Without a cpu cgroup (an unprivileged gateway; a machine without the cpu controller) the one
 * cheap bound left: runtimes run at nice 10, so under contention the gateway's threads (nice 0)
 * weigh about ten times a runtime's (the kernel's nice-to-weight table: 1024 vs 110), and a
 * sandboxed runtime's session (its autogroup, where the kernel groups sessions) gets the same
 * nice. A process cannot lower its nice without CAP_SYS_NICE, so function code cannot undo it;
 * a child that starts a session of its own gets a new autogroup at nice 0, which only the cgroup
 * bounds (docs/sandbox.md "CPU"). RLIMIT_CPU is not used: it counts a process's whole life, and a
 * runtime serves many calls.
 */
export const RUNTIME_NICE = 10;

/** A function's CPU setting, as the management API takes it: millicores, or null for the default. */
export interface CpuSetting {
  requestMillicores: number | null;
  limitMillicores: number | null;
}

export interface CpuCgroupValues {
  v1: { shares: number; quotaUs: number; periodUs: number };
  v2: { weight: number; max: string };
}

/** cgroup v1 shares of a CPU request in millicores (kubelet's MilliCPUToShares). */
export function sharesOf(requestMillicores: number | null): number {
  if (requestMillicores === null) return DEFAULT_SHARES;
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor((requestMillicores * 1024) / 1000)));
}

/** cgroup v1 quota in µs per CPU_PERIOD_US of a CPU limit in millicores; -1 (none) without one. */
export function quotaOf(limitMillicores: number | null): number {
  if (limitMillicores === null) return -1;
  return Math.max(MIN_QUOTA_US, Math.floor((limitMillicores * CPU_PERIOD_US) / 1000));
}

/** cgroup v2 weight (1..10000) of v1 shares, the kernel's and runc's conversion. */
export function weightOf(shares: number): number {
  return 1 + Math.floor(((shares - MIN_SHARES) * 9999) / (MAX_SHARES - MIN_SHARES));
}

/** Both cgroup versions' values for a function's CPU setting. */
export function cpuCgroupValues(setting: CpuSetting): CpuCgroupValues {
  const shares = sharesOf(setting.requestMillicores);
  const quotaUs = quotaOf(setting.limitMillicores);
  return {
    v1: { shares, quotaUs, periodUs: CPU_PERIOD_US },
    v2: { weight: weightOf(shares), max: `${quotaUs < 0 ? 'max' : quotaUs} ${CPU_PERIOD_US}` },
  };
}

/** The default setting: the weight of one CPU, no ceiling. */
export const DEFAULT_CPU: CpuSetting = { requestMillicores: null, limitMillicores: null };

/**
 * Writes a group's CPU files. `dir` is the group's folder under the cpu controller (v1) or under
 * the unified hierarchy (v2). Synchronous: a warm-pool sandbox's group is made on the synchronous
 * spawn path; these are a few bytes to cgroupfs.
 */
export function writeCpu(dir: string, version: 1 | 2, values: CpuCgroupValues): void {
  if (version === 1) {
    // The period first: a quota is checked against the period in force.
    writeFileSync(join(dir, 'cpu.cfs_period_us'), String(values.v1.periodUs));
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(values.v1.quotaUs));
    writeFileSync(join(dir, 'cpu.shares'), String(values.v1.shares));
  } else {
    writeFileSync(join(dir, 'cpu.max'), values.v2.max);
    writeFileSync(join(dir, 'cpu.weight'), String(values.v2.weight));
  }
}

/** A function's CPU setting from the API's quantities ("250m", "0.5"; null: the default). */
export function cpuSettingOf(cpu: { request: string | null; limit: string | null } | undefined): CpuSetting {
  if (cpu === undefined) return DEFAULT_CPU;
  return { requestMillicores: cpu.request === null ? null : millicores(cpu.request), limitMillicores: cpu.limit === null ? null : millicores(cpu.limit) };
}
