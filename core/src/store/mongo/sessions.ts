import { MongoServerError, type Collection, type Db } from 'mongodb';
import type { SessionStore, StoredSession } from '../../stores.ts';
import type { MongoContext } from './context.ts';

// Admin panel sessions on MongoDB (collection admin_sessions), shared by
// every gateway replica on the same database: a session made through one
// replica is known to all, a sign-out through one ends it for all.

const DUPLICATE_KEY = 11000;

interface SessionDoc {
  /** SHA-256 (hex) of the cookie's session id; the id itself is never stored. */
  _id: string;
  label: string;
  csrf: string;
  createdAt: Date;
  lastSeenAt: Date;
  /** The TTL index removes the session once past; reads hide it from that instant (the TTL monitor runs about once a minute). */
  expireAt: Date;
}

export class MongoSessionStore implements SessionStore {
  readonly #ctx: MongoContext;
  readonly #sessions: Collection<SessionDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#sessions = db.collection<SessionDoc>('admin_sessions');
  }

  async create(session: StoredSession, keepAtMost: number): Promise<void> {
    let attempt = 0;
    await this.#ctx.run('session create', true, async () => {
      attempt++;
      try {
        await this.#sessions.insertOne({
          _id: session.idHash,
          label: session.label,
          csrf: session.csrf,
          createdAt: new Date(session.createdAt),
          lastSeenAt: new Date(session.lastSeenAt),
          expireAt: new Date(session.expiresAt),
        });
      } catch (err) {
        // A resent insert finding our own first attempt is success (a 256-bit id does not collide otherwise).
        if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY && attempt > 1)) throw err;
      }
    });
    // The cap: the new session and the keepAtMost - 1 newest others stay.
    const keepOthers = Math.max(0, keepAtMost - 1);
    const others = { _id: { $ne: session.idHash } };
    const count = await this.#ctx.run('session count', true, () => this.#sessions.countDocuments(others, { limit: keepOthers + 1 }));
    if (count <= keepOthers) return;
    const old = await this.#ctx.run('session cap', true, () =>
      this.#sessions.find(others, { projection: { _id: 1 } }).sort({ createdAt: -1 }).skip(keepOthers).toArray());
    if (old.length > 0) await this.#ctx.run('session cap', true, () => this.#sessions.deleteMany({ _id: { $in: old.map((doc) => doc._id) } }));
  }

  async get(idHash: string, now: number): Promise<StoredSession | null> {
    const doc = await this.#ctx.run('session get', true, () => this.#sessions.findOne({ _id: idHash, expireAt: { $gt: new Date(now) } }));
    return doc === null ? null : {
      idHash: doc._id,
      label: doc.label,
      csrf: doc.csrf,
      createdAt: doc.createdAt.getTime(),
      lastSeenAt: doc.lastSeenAt.getTime(),
      expiresAt: doc.expireAt.getTime(),
    };
  }

  async touch(idHash: string, lastSeenAt: number, expiresAt: number): Promise<boolean> {
    // $max: two replicas touching at once (or with clocks a little apart) never move a session back.
    const result = await this.#ctx.run('session touch', true, () =>
      this.#sessions.updateOne({ _id: idHash }, { $max: { lastSeenAt: new Date(lastSeenAt), expireAt: new Date(expiresAt) } }));
    return result.matchedCount === 1;
  }

  async delete(idHash: string): Promise<boolean> {
    return this.#ctx.run('session delete', true, async () => (await this.#sessions.deleteOne({ _id: idHash })).deletedCount === 1);
  }

  async sweep(now: number): Promise<number> {
    return this.#ctx.run('session sweep', true, async () => (await this.#sessions.deleteMany({ expireAt: { $lte: new Date(now) } })).deletedCount);
  }
}

export async function ensureSessionIndexes(db: Db): Promise<void> {
  await db.collection('admin_sessions').createIndexes([
    { key: { expireAt: 1 }, name: 'ttl_expireAt', expireAfterSeconds: 0 },
    { key: { createdAt: -1 }, name: 'created_newest' },
  ]);
}
