import { ConfigError } from '../config.ts';

// The sandbox's settings (docs/sandbox.md), read from the environment once at start.

export interface SandboxSettings {
  /** FNHOST_SANDBOX=off: run runtimes unsandboxed even where the OS could sandbox them (benchmarks, debugging); a fallback like any other. */
  disabled: boolean;
  /** FNHOST_REQUIRE_SANDBOX=1: any fallback stops the start. */
  require: boolean;
  /** FNHOST_UNSAFE_NO_SANDBOX=1: allow unsandboxed runtimes while listening beyond loopback. */
  unsafeNoSandbox: boolean;
  /** When the gateway is root: runtimes run under uids uidBase .. uidBase+uidCount-1, one per runtime. */
  uidBase: number;
  uidCount: number;
  /** Per runtime. */
  processes: number;
  openFiles: number;
  fileBytes: number;
  tmpBytes: number;
  /** Memory a runtime may use beyond its function's heap (memory_mib): Node itself, buffers, /tmp (cgroup memory limit = memory_mib + this). */
  memoryHeadroomMib: number;
}

const MIB = 1024 * 1024;

function flag(env: Record<string, string | undefined>, name: string): boolean {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '' || raw === '0') return false;
  if (raw === '1') return true;
  throw new ConfigError(`${name}="${raw}" must be 1 or 0`);
}

function int(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) throw new ConfigError(`${name}="${raw}" must be an integer from ${min} to ${max}`);
  return n;
}

export function loadSandboxSettings(env: Record<string, string | undefined> = process.env): SandboxSettings {
  const mode = env.FNHOST_SANDBOX?.trim() ?? '';
  if (mode !== '' && mode !== 'auto' && mode !== 'off') throw new ConfigError(`FNHOST_SANDBOX="${mode}" must be auto (the default) or off`);
  const uidBase = int(env, 'FNHOST_SANDBOX_UID_BASE', 1_500_000_000, 1000, 4_000_000_000);
  const uidCount = int(env, 'FNHOST_SANDBOX_UID_COUNT', 65_536, 16, 1_000_000);
  if (uidBase + uidCount > 4_294_967_294) throw new ConfigError(`FNHOST_SANDBOX_UID_BASE + FNHOST_SANDBOX_UID_COUNT (${uidBase + uidCount}) passes the largest uid 4294967294`);
  return {
    disabled: mode === 'off',
    require: flag(env, 'FNHOST_REQUIRE_SANDBOX'),
    unsafeNoSandbox: flag(env, 'FNHOST_UNSAFE_NO_SANDBOX'),
    uidBase,
    uidCount,
    processes: int(env, 'FNHOST_SANDBOX_MAX_PROCESSES', 256, 32, 65_536),
    openFiles: int(env, 'FNHOST_SANDBOX_MAX_OPEN_FILES', 4096, 256, 1_048_576),
    fileBytes: int(env, 'FNHOST_SANDBOX_MAX_FILE_MIB', 64, 1, 65_536) * MIB,
    tmpBytes: int(env, 'FNHOST_SANDBOX_TMP_MIB', 64, 1, 65_536) * MIB,
    memoryHeadroomMib: int(env, 'FNHOST_SANDBOX_MEMORY_HEADROOM_MIB', 256, 64, 65_536),
  };
}
