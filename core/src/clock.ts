// Time, injected wherever something waits (the gateway's scheduler and its
// cluster-mode watches, executor and status feedback; the operator's work
// queue, backoff and leader election) so that tests drive it without waiting. Each side keeps its own
// systemClock: they differ in whether a timer keeps the process alive.

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}
