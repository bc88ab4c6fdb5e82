// What an idle process-isolated runtime gives back (issue 31: one idle runtime ≤ 50 MiB RSS;
// measured in docs/runtime.md "Where the memory goes"), with the handler on the runtime's main
// thread (FNHOST_ISOLATION=process, what the one-machine gateway starts):
//
// 1. One memory-reducing garbage collection once the runtime has been idle for IDLE_GC_MS after
//    it loaded or answered calls: V8 keeps the young generation it grew to while loading and
//    answering (2–2.5 MiB, against 0.25 after), and its own memory reducer waits for a full GC
//    that an idle runtime never does. Not on the load's or a call's path: a collection takes
//    ≈ 5–15 ms of CPU, so the first call after a load (P5) never waits for one.
// 2. Fewer timer ticks once idle (IDLE_CHECK_MS): every function a timer runs is compiled by
//    Maglev, then TurboFan, once it has run often enough, and compiling pages in the compilers'
//    code, which then stays in the idle process's RSS.

/** Idle time before the collection: as V8's own memory reducer, long after a call's garbage. */
export const IDLE_GC_MS = 5_000;

/**
 * How far apart the supervisor's checks are once a process-isolated runtime is idle and collected
 * (HEARTBEAT_MS otherwise; a call arriving brings it back at once). At 50 ms the checks' few
 * functions reach Maglev's invocation count (400) in ≈ 20 s of idling and TurboFan's (3,000) in
 * ≈ 150 s, and their garbage and code kept growing an idle runtime (57.5 → 59.9 MiB RSS over
 * 100 s; docs/runtime.md "Where the memory goes"); at 1 s neither count is reached within the
 * default 300 s idle stop. What it costs: a handler that blocks the loop with no call in flight
 * (work left after its answer) is measured up to 1 s short.
 */
export const IDLE_CHECK_MS = 1_000;

export interface IdleState {
  now: number;
  /** When a call was last seen in flight (or the module last loaded). */
  lastBusyAt: number;
  /** Calls or a load happened since the last collection. */
  dirty: boolean;
  inFlight: number;
}

/** Whether to collect now: idle for `delayMs` after activity that has not been collected after yet. */
export function shouldCollect(s: IdleState, delayMs = IDLE_GC_MS): boolean {
  return s.dirty && s.inFlight === 0 && s.now - s.lastBusyAt >= delayMs;
}

let gc: ((options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void) | undefined;

/**
 * A full, memory-reducing collection (V8's "last resort" flavour: it also shrinks the young
 * generation and releases the freed pages). The gc function is taken from a context of its own
 * (Node's documented way), so the handler's global scope never gets a `gc`.
 */
export function collectGarbage(): void {
  if (gc === undefined) {
    const v8 = process.getBuiltinModule('node:v8');
    v8.setFlagsFromString('--expose-gc');
    gc = process.getBuiltinModule('node:vm').runInNewContext('gc') as typeof gc;
    // Back as it was: the flag is part of the compile cache's key, so it must not stay changed.
    v8.setFlagsFromString('--no-expose-gc');
  }
  gc!({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
