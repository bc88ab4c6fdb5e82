// A throwaway version of a function in cluster mode (function:replay --code,
// docs/replay.md): a short-lived Function resource the gateway creates for one
// replay call and deletes after it. The gateway and the operator meet only
// through the API server, so what marks a Function as a throwaway, and when a
// leftover one has outlived its use, is decided here, once, for both.
//
// A throwaway carries the original's spec.functionId, so its runtime pod holds
// the original's runtime token and reaches the original's KV namespace, as the
// one-machine throwaway does (same function_id). For the same reason it is
// never a function of its own: the gateway keeps it out of every listing, and
// the operator never puts its log-cleaning finalizer on it (the logs under
// that id are the original's). A throwaway left behind (its gateway died
// mid-replay) is deleted past its expiry by any gateway replica: the gateway
// already may delete Functions, the operator may not (and need not).

/** `replay` on a throwaway Function (the only kind so far). */
export const LABEL_THROWAWAY = 'fnhost.dev/throwaway';
export const THROWAWAY_REPLAY = 'replay';
/** The name of the Function a throwaway is a version of (same namespace). */
export const LABEL_REPLAY_OF = 'fnhost.dev/replay-of';
/** RFC 3339: after this, a throwaway left behind (its gateway died mid-replay) is deleted. */
export const ANNOTATION_EXPIRES_AT = 'fnhost.dev/expires-at';
/** A throwaway whose expiry annotation is missing or unreadable lives at most this long after its creation. */
export const MAX_THROWAWAY_LIFETIME_MS = 15 * 60_000;

interface Meta {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string>; creationTimestamp?: string };
}

/** True for a throwaway version (labelled by the gateway that made it). */
export function isThrowaway(res: Meta): boolean {
  return res.metadata.labels?.[LABEL_THROWAWAY] !== undefined;
}

/** The name the function's code sees as its own: the original's for a throwaway. */
export function servedNameOf(res: Meta): string {
  return (isThrowaway(res) ? res.metadata.labels?.[LABEL_REPLAY_OF] : undefined) || res.metadata.name;
}

/**
 * When a throwaway is past its use: its expiry annotation, else its creation
 * plus MAX_THROWAWAY_LIFETIME_MS; with neither readable it is expired now (a
 * throwaway nobody can date is nobody's). `inMs`: how long until it expires.
 */
export function throwawayExpiry(res: Meta, nowMs: number): { expired: boolean; inMs: number } {
  let at = Date.parse(res.metadata.annotations?.[ANNOTATION_EXPIRES_AT] ?? '');
  if (!Number.isFinite(at)) at = Date.parse(res.metadata.creationTimestamp ?? '') + MAX_THROWAWAY_LIFETIME_MS;
  if (!Number.isFinite(at) || at <= nowMs) return { expired: true, inMs: 0 };
  return { expired: false, inMs: at - nowMs };
}
