// The recount of the async queue's byte counts (docs/async.md "Bounds"). Where
// the counts are written apart from the calls (MongoDB: a reservation before
// the insert, a release after the finishing update), a gateway killed between
// the two leaves bytes counted that no call holds (or the other way round).
// A pass compares each count with the bytes of the calls that hold a request
// (queued, running, dead): their difference is the drift. Writes under way
// make a drift for an instant too (a reservation whose insert has not landed),
// so a drift is corrected only when the next pass, a poll later, finds the same
// one for the same count: a write under way ends within milliseconds, a leak
// stays. Every finished write leaves the drift as it was, so a leak's drift
// stays the same whatever traffic passed between the two passes.

/** Bytes counted minus bytes held, per count id (a function id, or the total's), zeros left out. */
export type UsageDrift = ReadonlyMap<string, number>;

export interface UsageCorrection {
  id: string;
  /** What the count held when this pass read it (the correction applies only if it still does). */
  counted: number;
  /** Added to the count: minus the drift. */
  by: number;
}

export interface RecountResult {
  /** The drift to compare with next pass (the counts just corrected left out). */
  drift: UsageDrift;
  corrections: UsageCorrection[];
}

/** The drift of each count: `counts` as stored, `held` the calls that hold a request. */
export function usageDrift(counts: ReadonlyMap<string, number>, held: Iterable<{ function_id: string; bytes: number }>, totalId: string): Map<string, number> {
  const sums = new Map<string, number>();
  let total = 0;
  for (const c of held) {
    sums.set(c.function_id, (sums.get(c.function_id) ?? 0) + c.bytes);
    total += c.bytes;
  }
  const drift = new Map<string, number>();
  for (const [id, counted] of counts) {
    const d = counted - (id === totalId ? total : (sums.get(id) ?? 0));
    if (d !== 0) drift.set(id, d);
  }
  return drift;
}

/** The counts to correct: those whose drift this pass equals the last pass's. */
export function recountCorrections(previous: UsageDrift, current: UsageDrift, counts: ReadonlyMap<string, number>): RecountResult {
  const corrections: UsageCorrection[] = [];
  const drift = new Map(current);
  for (const [id, d] of current) {
    if (previous.get(id) !== d) continue;
    corrections.push({ id, counted: counts.get(id)!, by: -d });
    drift.delete(id);
  }
  return { drift, corrections };
}
