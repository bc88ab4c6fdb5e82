// What an idle process-isolated runtime keeps from growing (issue 31: one idle runtime ≤ 50 MiB
// RSS; docs/runtime.md "Where the memory goes"), with the handler on the runtime's main thread
// (FNHOST_ISOLATION=process, what the one-machine gateway starts): fewer timer ticks once idle.
// Every function a timer runs is compiled by Maglev, then TurboFan, once it has run often enough,
// and each tick leaves garbage the young generation grows with: at 20 checks a second an idle
// runtime grew from 57.5 to 59.9 MiB RSS within 100 s (measured; bench/RESULTS.md).
//
// Measured and not kept: a memory-reducing collection once idle (V8's gc, "last resort" or
// regular) gave 1.3–1.9 MiB back, but the burst of calls after each idle period then cost ≈ 1.5–2×
// the CPU per call (170 and 150 µs against 85 without it; code and feedback rebuilt), a cost
// P2b's bursty callers would pay to save memory on a machine that has it.

/** Idle time (no call in flight or arriving) after which a process-isolated runtime's checks slow to IDLE_CHECK_MS. */
export const IDLE_AFTER_MS = 5_000;

/**
 * How far apart the supervisor's checks are once a process-isolated runtime is idle (HEARTBEAT_MS
 * otherwise; a call arriving brings them back at once). At 50 ms the checks' few functions reach
 * Maglev's invocation count (400) in ≈ 20 s of idling and TurboFan's (3,000) in ≈ 150 s; at 1 s
 * neither within the default 300 s idle stop. What it costs: a handler that blocks the loop with
 * no call in flight (work left after its answer) is measured up to 1 s short.
 */
export const IDLE_CHECK_MS = 1_000;

export interface IdleState {
  now: number;
  /** When a call was last seen in flight or arriving (or the module loaded). */
  lastBusyAt: number;
  /** Calls in flight or queued for the handler's load. */
  inFlight: number;
}

/** Whether the runtime has been idle long enough for slow checks. */
export function isIdle(s: IdleState, afterMs = IDLE_AFTER_MS): boolean {
  return s.inFlight === 0 && s.now - s.lastBusyAt >= afterMs;
}
