import type { FunctionIdHome, HomeHow } from '../../function-id-home.ts';
import type { FunctionIdHomeStore } from '../../stores.ts';
import type { SqliteDb } from './db.ts';

// Each functionId's home namespace on SQLite (table function_id_homes, schema version 12).

interface HomeRow {
  function_id: string;
  namespace: string;
  name: string;
  how: string;
  at_ms: number;
}

function fromRow(row: HomeRow | undefined): FunctionIdHome | null {
  return row === undefined ? null : { function_id: row.function_id, namespace: row.namespace, name: row.name, how: row.how as HomeHow, at: row.at_ms };
}

export class SqliteFunctionIdHomeStore implements FunctionIdHomeStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  get(functionId: string): Promise<FunctionIdHome | null> {
    return this.db.guard('home get', () => fromRow(this.db.get<HomeRow>('SELECT * FROM function_id_homes WHERE function_id = ?', functionId)));
  }

  claim(home: FunctionIdHome): Promise<FunctionIdHome> {
    return this.db.guard('home claim', () =>
      this.db.transaction(() => {
        this.db.run('INSERT OR IGNORE INTO function_id_homes (function_id, namespace, name, how, at_ms) VALUES (?, ?, ?, ?, ?)',
          home.function_id, home.namespace, home.name, home.how, home.at);
        return fromRow(this.db.get<HomeRow>('SELECT * FROM function_id_homes WHERE function_id = ?', home.function_id))!;
      }));
  }

  move(from: string, to: FunctionIdHome): Promise<FunctionIdHome | null> {
    return this.db.guard('home move', () =>
      this.db.transaction(() => {
        this.db.run('UPDATE function_id_homes SET namespace = ?, name = ?, how = ?, at_ms = ? WHERE function_id = ? AND namespace = ?',
          to.namespace, to.name, to.how, to.at, to.function_id, from);
        return fromRow(this.db.get<HomeRow>('SELECT * FROM function_id_homes WHERE function_id = ?', to.function_id));
      }));
  }
}
