import { MongoServerError, type Collection, type Db } from 'mongodb';
import { isStale, judgeDead, openNotes } from '../../instances.ts';
import type { InstanceInfo, InstanceState, InstanceStore, WriterProgress } from '../../stores.ts';
import type { MongoContext } from './context.ts';
import { LogCounts, type PendingDoc } from './counts.ts';

// Gateway instances and what dead ones lost (`gateway_instances`; the seam is
// described in core/src/stores.ts, the guarantee in docs/mongodb.md).
//
// A live instance's document carries its writer's cumulative `accepted` and
// `written`, raised by every batch (MongoLogStore.insert with progress) and by
// heartbeats. The batch's note in `log_pending` names its records, the
// instance and the progress once the batch is stored (`upTo`), and is removed
// only after the instance's `written` passed `upTo`: so for a writer killed
// anywhere inside a batch, `written` plus the stored records of its open notes
// is exactly what it stored. A claim is one conditional update on the values
// it judged, so two gateways never both claim an instance, and an instance
// that wrote meanwhile is not claimed.
//
// A writer killed between storing a batch's records and applying their
// counts leaves the counts short of the records. The claimer finishes the
// dead writer's notes right after the claim (LogCounts.settleNotes: the
// counts of exactly the stored records each note names, keyed so that no
// count document takes a batch twice, then the note goes), and every scan
// finishes the notes of any writer that is no longer live and wrote none for
// the bound (a claimer that died half way, a shutdown that could not write
// everything).

export interface InstanceDoc {
  _id: string;
  host: string;
  pid: number;
  startedAt: Date;
  heartbeatAt: Date;
  accepted: number;
  written: number;
  endedAt?: Date;
  how?: 'shutdown' | 'claimed';
  by?: string | null;
  lost?: number;
  recovered?: number;
}

const DUPLICATE_KEY = 11000;
const live = { endedAt: { $exists: false } };

function toState(doc: InstanceDoc): InstanceState {
  return {
    id: doc._id,
    host: doc.host,
    pid: doc.pid,
    startedAt: doc.startedAt.getTime(),
    heartbeatAt: doc.heartbeatAt.getTime(),
    accepted: doc.accepted,
    written: doc.written,
    ended: doc.endedAt === undefined ? null : {
      at: doc.endedAt.getTime(),
      how: doc.how ?? 'claimed',
      by: doc.by ?? null,
      lost: doc.lost ?? 0,
      recovered: doc.recovered ?? 0,
    },
  };
}

export class MongoInstanceStore implements InstanceStore {
  readonly #ctx: MongoContext;
  readonly #instances: Collection<InstanceDoc>;
  readonly #pending: Collection<PendingDoc>;
  readonly #logs: Collection<{ _id: string }>;
  readonly #counts: LogCounts;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#instances = db.collection<InstanceDoc>('gateway_instances');
    this.#pending = db.collection<PendingDoc>('log_pending');
    this.#logs = db.collection<{ _id: string }>('logs');
    this.#counts = new LogCounts(db, ctx);
  }

  async register(info: InstanceInfo, now: number): Promise<void> {
    const doc: InstanceDoc = { _id: info.id, host: info.host, pid: info.pid, startedAt: new Date(info.startedAt), heartbeatAt: new Date(now), accepted: 0, written: 0 };
    await this.#ctx.run('instance register', true, async () => {
      try {
        await this.#instances.insertOne(doc);
      } catch (err) {
        // A resent insert finding its first attempt's document is success.
        if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY)) throw err;
      }
    });
  }

  async heartbeat(progress: WriterProgress): Promise<boolean> {
    return recordProgress(this.#ctx, this.#instances, progress);
  }

  async end(progress: WriterProgress, now: number): Promise<boolean> {
    const lost = Math.max(0, progress.accepted - progress.written);
    if (lost === 0) {
      // Every batch was stored and counted: a note left (its removal failed) is done, and
      // then the marks of this writer on the totals and counters are never consulted again.
      const removed = await this.#ctx.run('instance end', true, async () => (await this.#instances.deleteOne({ _id: progress.instance, ...live })).deletedCount === 1);
      if (removed) {
        try {
          await this.#ctx.run('instance end', true, () => this.#pending.deleteMany({ owner: progress.instance }));
          await this.#counts.forget(progress.instance);
        } catch (err) {
          // The end stands. A note left is finished by a scan later (its marks say it is counted).
          this.#ctx.retry.log('MongoDB cleanup after a clean end failed; a later scan finishes it', { error: (err as Error).message });
        }
      }
      return removed;
    }
    return this.#ctx.run('instance end', true, async () => {
      const result = await this.#instances.updateOne({ _id: progress.instance, ...live }, {
        $set: { endedAt: new Date(now), how: 'shutdown', by: null, lost, recovered: 0, accepted: progress.accepted, written: progress.written, heartbeatAt: new Date(progress.at) },
      });
      return result.matchedCount === 1;
    });
  }

  async claimStale(claimer: string, deadAfterMs: number, now: number): Promise<InstanceState[]> {
    const candidates = await this.#ctx.run('instance scan', true, () => this.#instances
      .find({ ...live, _id: { $ne: claimer }, heartbeatAt: { $lt: new Date(now - deadAfterMs) } })
      .toArray());
    const claimed: InstanceState[] = [];
    for (const candidate of candidates) {
      if (!isStale(candidate.heartbeatAt.getTime(), now, deadAfterMs)) continue;
      const notes = (await this.#ctx.run('instance notes', true, () => this.#pending.find({ owner: candidate._id }).toArray()))
        .filter((n): n is PendingDoc & { upTo: number; accepted: number; at: number } => typeof n.upTo === 'number');
      const ids = [...new Set(openNotes(candidate.written, notes).flatMap((n) => n.ids))];
      const stored = ids.length === 0 ? 0 : await this.#ctx.run('instance stored', true, () => this.#logs.countDocuments({ _id: { $in: ids } }));
      const judged = judgeDead(
        { accepted: candidate.accepted, written: candidate.written, heartbeatAt: candidate.heartbeatAt.getTime() },
        notes,
        stored,
      );
      // Only if nothing changed since it was read: an instance that wrote meanwhile is alive.
      const result = await this.#ctx.run('instance claim', true, () => this.#instances.findOneAndUpdate(
        { _id: candidate._id, ...live, heartbeatAt: candidate.heartbeatAt, accepted: candidate.accepted, written: candidate.written },
        { $set: { endedAt: new Date(now), how: 'claimed', by: claimer, lost: judged.lost, recovered: 0, accepted: judged.accepted, written: judged.written, heartbeatAt: new Date(judged.at) } },
        { returnDocument: 'after' },
      ));
      // A resent claim finds the document ended by its own first attempt.
      const doc = result ?? (await this.#instances.findOne({ _id: candidate._id, by: claimer, endedAt: new Date(now) }));
      if (doc) claimed.push(toState(doc));
    }
    try {
      await this.#settleNotes(new Set(claimed.map((c) => c.id)), deadAfterMs, now);
    } catch (err) {
      // The claims stand; the next scan (this gateway's or another's) finishes the notes.
      this.#ctx.retry.log("MongoDB: finishing dead writers' batch notes failed; the next scan retries", { error: (err as Error).message });
    }
    return claimed;
  }

  /**
   * Finishes the notes of writers that are not live: those claimed just now,
   * and any other whose notes are all older than the bound (so a later scan
   * never finishes the batch in flight of a gateway taken for dead while
   * alive that still writes under its old id).
   */
  async #settleNotes(claimedNow: ReadonlySet<string>, deadAfterMs: number, now: number): Promise<void> {
    const owners = (await this.#ctx.run('instance notes', true, () => this.#pending.distinct('owner', { owner: { $exists: true } })))
      .filter((o): o is string => typeof o === 'string');
    if (owners.length === 0) return;
    const liveOwners = new Set((await this.#ctx.run('instance notes', true, () => this.#instances
      .find({ _id: { $in: owners }, ...live }, { projection: { _id: 1 } })
      .toArray())).map((d) => d._id));
    for (const owner of owners) {
      if (liveOwners.has(owner)) continue;
      const notes = await this.#ctx.run('instance notes', true, () => this.#pending.find({ owner }).toArray());
      if (!claimedNow.has(owner) && notes.some((n) => (n.at ?? 0) > now - deadAfterMs)) continue;
      await this.#counts.settleNotes(notes);
    }
  }

  async get(id: string): Promise<InstanceState | null> {
    const doc = await this.#ctx.run('instance get', true, () => this.#instances.findOne({ _id: id }));
    return doc ? toState(doc) : null;
  }

  async recover(id: string, recovered: number): Promise<void> {
    await this.#ctx.run('instance recover', true, () => this.#instances.updateOne({ _id: id, how: 'claimed' }, { $max: { recovered } }));
  }

  async lossTotals(): Promise<{ lost: number; recovered: number; dead: number }> {
    const docs = await this.#ctx.run('instance totals', true, () => this.#instances
      .find({ endedAt: { $exists: true } }, { projection: { lost: 1, recovered: 1, how: 1 } })
      .toArray());
    let lost = 0;
    let recovered = 0;
    let dead = 0;
    for (const doc of docs) {
      lost += doc.lost ?? 0;
      recovered += doc.recovered ?? 0;
      if (doc.how === 'claimed') dead++;
    }
    return { lost, recovered, dead };
  }
}

/** Raises a live instance's progress ($max: resends and reordering never lower it). False when it is no longer live. */
export async function recordProgress(ctx: MongoContext, instances: Collection<InstanceDoc>, progress: WriterProgress): Promise<boolean> {
  return ctx.run('instance progress', true, async () => {
    const result = await instances.updateOne(
      { _id: progress.instance, ...live },
      { $max: { accepted: progress.accepted, written: progress.written, heartbeatAt: new Date(progress.at) } },
    );
    return result.matchedCount === 1;
  });
}

export async function ensureInstanceIndexes(db: Db): Promise<void> {
  // A handful of live instances and one document per dead one: the scans read
  // it whole. The notes a claim reads are found by owner.
  await db.collection('log_pending').createIndexes([{ key: { owner: 1 }, name: 'owner', sparse: true }]);
}
