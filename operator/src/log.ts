// JSON log lines on stdout, one object per line. Never pass a token or a
// Secret's data as a field.

export type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function jsonLogger(level: Level = 'info', base: Record<string, unknown> = {}, write: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  const emit = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < ORDER[level]) return;
    const record: Record<string, unknown> = { time: new Date().toISOString(), level: lvl, msg, ...base, ...fields };
    for (const [k, v] of Object.entries(record)) if (v instanceof Error) record[k] = v.message;
    write(JSON.stringify(record) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => jsonLogger(level, { ...base, ...fields }, write),
  };
}
