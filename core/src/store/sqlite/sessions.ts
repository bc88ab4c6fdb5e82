import type { SessionStore, StoredSession } from '../../stores.ts';
import type { SqliteDb } from './db.ts';

// Admin panel sessions on SQLite (table admin_sessions, schema version 5).
// One machine has one gateway, but keeping them in the database file means a
// restart of the gateway does not sign anyone out.

interface SessionRow {
  id_hash: string;
  label: string;
  csrf: string;
  created_ms: number;
  last_seen_ms: number;
  expires_ms: number;
}

export class SqliteSessionStore implements SessionStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  create(session: StoredSession, keepAtMost: number): Promise<void> {
    return this.db.guard('session create', () =>
      this.db.transaction(() => {
        this.db.run('INSERT INTO admin_sessions (id_hash, label, csrf, created_ms, last_seen_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)',
          session.idHash, session.label, session.csrf, session.createdAt, session.lastSeenAt, session.expiresAt);
        // The new session and the keepAtMost - 1 newest others stay (LIMIT -1: no limit after the OFFSET).
        this.db.run('DELETE FROM admin_sessions WHERE id_hash IN (SELECT id_hash FROM admin_sessions WHERE id_hash <> ? ORDER BY created_ms DESC LIMIT -1 OFFSET ?)',
          session.idHash, Math.max(0, keepAtMost - 1));
      }));
  }

  get(idHash: string, now: number): Promise<StoredSession | null> {
    return this.db.guard('session get', () => {
      const row = this.db.get<SessionRow>('SELECT * FROM admin_sessions WHERE id_hash = ? AND expires_ms > ?', idHash, now);
      return row === undefined ? null : {
        idHash: row.id_hash, label: row.label, csrf: row.csrf, createdAt: row.created_ms, lastSeenAt: row.last_seen_ms, expiresAt: row.expires_ms,
      };
    });
  }

  touch(idHash: string, lastSeenAt: number, expiresAt: number): Promise<boolean> {
    return this.db.guard('session touch', () => Number(this.db.run(
      'UPDATE admin_sessions SET last_seen_ms = max(last_seen_ms, ?), expires_ms = max(expires_ms, ?) WHERE id_hash = ?',
      lastSeenAt, expiresAt, idHash,
    ).changes) > 0);
  }

  delete(idHash: string): Promise<boolean> {
    return this.db.guard('session delete', () => Number(this.db.run('DELETE FROM admin_sessions WHERE id_hash = ?', idHash).changes) > 0);
  }

  sweep(now: number): Promise<number> {
    return this.db.guard('session sweep', () => Number(this.db.run('DELETE FROM admin_sessions WHERE expires_ms <= ?', now).changes));
  }
}
