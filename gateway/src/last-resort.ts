import type { BackgroundFailures } from './background.ts';
import type { Logger } from './log.ts';

// The last resort for an error no task caught (process 'uncaughtException', which
// also receives unhandled rejections under Node's default --unhandled-rejections=throw).
// Every background task catches its own failures (background.ts), so reaching this
// is a bug. The policy:
//
//  - A resource running out at a system call (EMFILE, ENFILE, ENOSPC, ENOMEM,
//    EAGAIN: an errno with a `syscall`) is what an attacker or a full disk causes,
//    and it fails one operation at its start: the gateway keeps serving, the
//    failure is counted (fnhost_background_failures_total{task="uncaught"}) and
//    logged. Ending the process here is what turned one client's connections into
//    an outage in issue 27.
//  - Anything else is an unknown state: logged with its stack and the process
//    ends with status 1, as Node's default does, so the supervisor (systemd,
//    Kubernetes) starts a clean one. Carrying on after an unknown throw risks
//    serving with broken invariants (a lost record, a runtime never stopped).

const RESOURCE_CODES = new Set(['EMFILE', 'ENFILE', 'ENOSPC', 'ENOMEM', 'EAGAIN']);

/** Whether an uncaught error is a resource running out at a system call (pure). */
export function survivable(err: unknown): boolean {
  const e = err as NodeJS.ErrnoException | undefined;
  return typeof e === 'object' && e !== null && typeof e.code === 'string' && RESOURCE_CODES.has(e.code) && typeof e.syscall === 'string';
}

export interface LastResortOptions {
  logger: Logger;
  /** The running gateway's reporter (undefined before it started: the error is logged only). */
  background: () => BackgroundFailures | undefined;
  exit?: (code: number) => void;
}

/** The policy above as a function (unit-tested without touching the process). */
export function lastResortHandler(options: LastResortOptions): (err: unknown, origin?: string) => void {
  return (err: unknown, origin?: string) => {
    if (survivable(err)) {
      const background = options.background();
      if (background !== undefined) background.failed('uncaught', err, { origin });
      else options.logger.error('an uncaught resource error was survived', { error: (err as Error).message, code: (err as NodeJS.ErrnoException).code, origin });
      return;
    }
    options.logger.error('uncaught error: the gateway stops (its supervisor starts a clean one)', { error: (err as Error)?.message ?? String(err), stack: (err as Error)?.stack, origin });
    (options.exit ?? ((code: number) => process.exit(code)))(1);
  };
}

export function installLastResort(options: LastResortOptions): void {
  process.on('uncaughtException', lastResortHandler(options));
}
