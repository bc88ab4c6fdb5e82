import { FnhostError } from '@fnhost/core';
import type { SandboxSupport } from './sandbox.ts';
import type { SandboxSettings } from './settings.ts';

// Where the OS cannot sandbox (docs/sandbox.md "Without a sandbox"): local development on
// loopback still runs, with a warning; beyond loopback runtimes would run code its operator does
// not trust with the gateway's own rights, so that takes FNHOST_UNSAFE_NO_SANDBOX=1, and
// FNHOST_REQUIRE_SANDBOX=1 refuses any fallback.

export class SandboxUnavailableError extends FnhostError {
  constructor(message: string) {
    super('sandbox_unavailable', 500, message, { expose: true });
  }
}

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The status the gateway reports (GET /api/v1/info `sandbox`) and warns about; throws when the fallback is not allowed. */
export function sandboxStatus(support: SandboxSupport, settings: SandboxSettings, host: string): { enabled: boolean; warning?: string } {
  if (support.sandboxed) return { enabled: true };
  const why = support.reason;
  if (settings.require) throw new SandboxUnavailableError(`FNHOST_REQUIRE_SANDBOX=1 but runtimes cannot be sandboxed: ${why}`);
  if (!isLoopbackHost(host) && !settings.unsafeNoSandbox) {
    throw new SandboxUnavailableError(
      `runtimes cannot be sandboxed (${why}) and the gateway listens on ${host}, beyond loopback: functions would run with the gateway's rights. Install bubblewrap, listen on 127.0.0.1, or set FNHOST_UNSAFE_NO_SANDBOX=1 to accept the risk`,
    );
  }
  return { enabled: false, warning: `functions run WITHOUT a sandbox: ${why}. A function can read the admin token, the database and other functions' code, and reach the network (docs/sandbox.md)` };
}
