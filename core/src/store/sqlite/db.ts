import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { ConflictError, FnhostError, StoreError } from '../../errors.ts';

// The connection and the few helpers every table's store shares: a statement
// cache (each SQL text is prepared once and reused), transactions, and the
// translation of SQLite failures into the project's error families.

/** SQLite extended result codes for unique and primary-key violations. */
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

export function isUniqueViolation(err: unknown): boolean {
  const errcode = (err as { errcode?: unknown } | null)?.errcode;
  return errcode === SQLITE_CONSTRAINT_UNIQUE || errcode === SQLITE_CONSTRAINT_PRIMARYKEY;
}

export class SqliteDb {
  readonly db: DatabaseSync;
  readonly path: string;
  private readonly statements = new Map<string, StatementSync>();
  private closed = false;

  constructor(path: string) {
    this.path = path;
    try {
      this.db = new DatabaseSync(path, { timeout: 5000 });
    } catch (err) {
      throw new StoreError(`cannot open the SQLite database at ${path}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** The prepared statement for this SQL text, prepared on first use. */
  stmt(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  run(sql: string, ...params: SQLInputValue[]) {
    return this.stmt(sql).run(...params);
  }

  get<T>(sql: string, ...params: SQLInputValue[]): T | undefined {
    return this.stmt(sql).get(...params) as T | undefined;
  }

  all<T>(sql: string, ...params: SQLInputValue[]): T[] {
    return this.stmt(sql).all(...params) as T[];
  }

  /** Runs fn in one write transaction (BEGIN IMMEDIATE takes the write lock up front, so it never fails half-way on a busy upgrade). */
  transaction<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
  }

  /**
   * Runs fn in one read transaction, so the several statements of a listing
   * (counts, bucket walks, the page) see one snapshot even while another
   * connection writes.
   */
  snapshot<T>(fn: () => T): T {
    this.db.exec('BEGIN');
    try {
      return fn();
    } finally {
      if (this.db.isTransaction) this.db.exec('COMMIT');
    }
  }

  /**
   * Runs one store operation, turning a database failure into StoreError
   * (with the cause) and keeping the project's own errors as they are.
   */
  guard<T>(what: string, fn: () => T): Promise<T> {
    try {
      if (this.closed) throw new StoreError(`SQLite store at ${this.path} is closed (${what})`);
      return Promise.resolve(fn());
    } catch (err) {
      if (err instanceof FnhostError) return Promise.reject(err);
      return Promise.reject(new StoreError(`SQLite ${what} failed: ${(err as Error).message}`, { cause: err }));
    }
  }

  /** guard for an operation that yields to the event loop between steps. */
  async guardAsync<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      if (this.closed) throw new StoreError(`SQLite store at ${this.path} is closed (${what})`);
      return await fn();
    } catch (err) {
      if (err instanceof FnhostError) throw err;
      throw new StoreError(`SQLite ${what} failed: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Like guard, with unique violations reported as ConflictError carrying `conflictMessage`. */
  guardConflict<T>(what: string, conflictMessage: () => string, fn: () => T): Promise<T> {
    return this.guard(what, () => {
      try {
        return fn();
      } catch (err) {
        if (isUniqueViolation(err)) throw new ConflictError(conflictMessage());
        throw err;
      }
    });
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.statements.clear();
    // Fold the WAL back into the main file so a copied database file is complete.
    try {
      if (this.path !== ':memory:') this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    } finally {
      this.db.close();
    }
  }
}
