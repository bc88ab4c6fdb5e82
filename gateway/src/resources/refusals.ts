import type { Logger } from '../log.ts';
import type { Metrics, RefusalReason } from '../metrics.ts';
import { logDue } from '../background.ts';

// Every refusal at a bound on a shared resource (a connection past the global or
// per-client bound, a slow sender timed out, a body past the memory budget) is
// counted in fnhost_refused_total{reason} and logged, but at most one line per
// reason per LOG_EVERY_MS: an attack makes thousands of refusals a second, and
// one log line each would be an attack on the log (the lines in between are
// counted in the next one). No peer address or secret goes into the line.

export class Refusals {
  readonly #metrics: Pick<Metrics, 'refused'>;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #lastLogAt = new Map<RefusalReason, number>();
  readonly #since = new Map<RefusalReason, number>();

  constructor(options: { metrics: Pick<Metrics, 'refused'>; logger: Logger; now?: () => number }) {
    this.#metrics = options.metrics;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
  }

  /** Counts one refusal; logs `message` unless this reason logged within the last LOG_EVERY_MS. */
  refused(reason: RefusalReason, message: string, fields: Record<string, unknown> = {}): void {
    this.#metrics.refused(reason);
    const n = (this.#since.get(reason) ?? 0) + 1;
    this.#since.set(reason, n);
    const now = this.#now();
    if (!logDue(this.#lastLogAt.get(reason), now)) return;
    this.#lastLogAt.set(reason, now);
    this.#since.set(reason, 0);
    this.#logger.warn(message, { reason, refused_since_last_line: n, ...fields });
  }
}
