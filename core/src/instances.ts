// The arithmetic of counting execution records lost by a gateway that died
// (SIGKILL, OOM kill, node loss): what counts as dead, and what a dead
// instance is judged to have lost. The stores (core/src/store/*/instances.ts)
// apply it; docs/mongodb.md ("Counting what a killed gateway lost") says what
// it guarantees.

/** Taken for dead: the instance's last heartbeat is more than `deadAfterMs` before `now`. */
export function isStale(heartbeatAt: number, now: number, deadAfterMs: number): boolean {
  return now - heartbeatAt > deadAfterMs;
}

/**
 * A note a writer left before storing a batch (MongoDB's `log_pending`): the
 * writer's progress once that batch is stored (`upTo` written, `accepted`), as
 * of `at`. The instance's own progress passes `upTo` before the note is
 * removed, so a note with `upTo` above the instance's `written` is a batch
 * whose records may be stored, in part or in full, without being counted there.
 */
export interface BatchNote {
  upTo: number;
  accepted: number;
  at: number;
}

/** The notes whose records the instance's `written` does not include yet. */
export function openNotes<N extends BatchNote>(written: number, notes: readonly N[]): N[] {
  return notes.filter((note) => note.upTo > written);
}

export interface Judgement {
  /** Records accepted as far as the evidence goes (the freshest of the instance and its notes). */
  accepted: number;
  /** Records stored: the instance's written plus the stored records of its open notes. */
  written: number;
  lost: number;
  /** When the evidence was written (the writer's clock): records accepted after it are not in `accepted`. */
  at: number;
}

/**
 * Judges a dead instance: `last` is its recorded progress, `notes` every note
 * it left, `storedOfOpen` how many distinct records named by its open notes
 * are stored. lost = accepted - written, never below 0.
 */
export function judgeDead(last: { accepted: number; written: number; heartbeatAt: number }, notes: readonly BatchNote[], storedOfOpen: number): Judgement {
  let accepted = last.accepted;
  let at = last.heartbeatAt;
  for (const note of notes) {
    accepted = Math.max(accepted, note.accepted);
    at = Math.max(at, note.at);
  }
  const written = last.written + storedOfOpen;
  return { accepted, written, lost: Math.max(0, accepted - written), at };
}
