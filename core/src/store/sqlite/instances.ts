import { isStale, judgeDead } from '../../instances.ts';
import type { InstanceInfo, InstanceState, InstanceStore, WriterProgress } from '../../stores.ts';
import type { SqliteDb } from './db.ts';

// Gateway instances and what dead ones lost, on SQLite (table
// gateway_instances, schema version 6; the seam is in core/src/stores.ts).
// One machine runs one gateway on a database file, but its log writer queues
// records in memory just the same, so a SIGKILL loses the queue here too; the
// next gateway on the file counts it. The writer's batch and its progress
// commit in one transaction (SqliteLogStore.insert), so `written` is exact
// and no batch notes are needed; a claim is one transaction.

interface InstanceRow {
  id: string;
  host: string;
  pid: number;
  started_ms: number;
  heartbeat_ms: number;
  accepted: number;
  written: number;
  ended_ms: number | null;
  how: string | null;
  by: string | null;
  lost: number | null;
  recovered: number | null;
}

function toState(row: InstanceRow): InstanceState {
  return {
    id: row.id,
    host: row.host,
    pid: row.pid,
    startedAt: row.started_ms,
    heartbeatAt: row.heartbeat_ms,
    accepted: row.accepted,
    written: row.written,
    ended: row.ended_ms === null ? null : {
      at: row.ended_ms,
      how: row.how === 'shutdown' ? 'shutdown' : 'claimed',
      by: row.by,
      lost: row.lost ?? 0,
      recovered: row.recovered ?? 0,
    },
  };
}

/** Raises a live instance's progress inside the caller's transaction; false when it is no longer live. */
export function recordProgressSync(db: SqliteDb, progress: WriterProgress): boolean {
  return Number(db.run(
    'UPDATE gateway_instances SET accepted = max(accepted, ?), written = max(written, ?), heartbeat_ms = max(heartbeat_ms, ?) WHERE id = ? AND ended_ms IS NULL',
    progress.accepted, progress.written, progress.at, progress.instance,
  ).changes) > 0;
}

export class SqliteInstanceStore implements InstanceStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  register(info: InstanceInfo, now: number): Promise<void> {
    return this.db.guard('instance register', () => {
      this.db.run('INSERT INTO gateway_instances (id, host, pid, started_ms, heartbeat_ms, accepted, written) VALUES (?, ?, ?, ?, ?, 0, 0)',
        info.id, info.host, info.pid, info.startedAt, now);
    });
  }

  heartbeat(progress: WriterProgress): Promise<boolean> {
    return this.db.guard('instance heartbeat', () => recordProgressSync(this.db, progress));
  }

  end(progress: WriterProgress, now: number): Promise<boolean> {
    const lost = Math.max(0, progress.accepted - progress.written);
    return this.db.guard('instance end', () => {
      if (lost === 0) return Number(this.db.run('DELETE FROM gateway_instances WHERE id = ? AND ended_ms IS NULL', progress.instance).changes) > 0;
      return Number(this.db.run(
        "UPDATE gateway_instances SET ended_ms = ?, how = 'shutdown', by = NULL, lost = ?, recovered = 0, accepted = ?, written = ?, heartbeat_ms = ? WHERE id = ? AND ended_ms IS NULL",
        now, lost, progress.accepted, progress.written, progress.at, progress.instance,
      ).changes) > 0;
    });
  }

  claimStale(claimer: string, deadAfterMs: number, now: number): Promise<InstanceState[]> {
    return this.db.guard('instance claim', () => this.db.transaction(() => {
      const rows = this.db.all<InstanceRow>('SELECT * FROM gateway_instances WHERE ended_ms IS NULL AND id <> ? AND heartbeat_ms < ?', claimer, now - deadAfterMs);
      const claimed: InstanceState[] = [];
      for (const row of rows) {
        if (!isStale(row.heartbeat_ms, now, deadAfterMs)) continue;
        const judged = judgeDead({ accepted: row.accepted, written: row.written, heartbeatAt: row.heartbeat_ms }, [], 0);
        this.db.run(
          "UPDATE gateway_instances SET ended_ms = ?, how = 'claimed', by = ?, lost = ?, recovered = 0 WHERE id = ? AND ended_ms IS NULL",
          now, claimer, judged.lost, row.id,
        );
        claimed.push(toState({ ...row, ended_ms: now, how: 'claimed', by: claimer, lost: judged.lost, recovered: 0 }));
      }
      return claimed;
    }));
  }

  get(id: string): Promise<InstanceState | null> {
    return this.db.guard('instance get', () => {
      const row = this.db.get<InstanceRow>('SELECT * FROM gateway_instances WHERE id = ?', id);
      return row === undefined ? null : toState(row);
    });
  }

  recover(id: string, recovered: number): Promise<void> {
    return this.db.guard('instance recover', () => {
      this.db.run("UPDATE gateway_instances SET recovered = max(recovered, ?) WHERE id = ? AND how = 'claimed'", recovered, id);
    });
  }

  lossTotals(): Promise<{ lost: number; recovered: number; dead: number }> {
    return this.db.guard('instance totals', () => {
      const row = this.db.get<{ lost: number | null; recovered: number | null; dead: number | null }>(
        "SELECT sum(lost) AS lost, sum(recovered) AS recovered, sum(how = 'claimed') AS dead FROM gateway_instances WHERE ended_ms IS NOT NULL",
      );
      return { lost: row?.lost ?? 0, recovered: row?.recovered ?? 0, dead: row?.dead ?? 0 };
    });
  }
}
