import type { Clock } from '@fnhost/core/clock.ts';
import type { Logger } from '../../../gateway/src/log.ts';

/** A clock whose time moves only when the test says so; due timers run in order. */
export class FakeClock implements Clock {
  t = 1_700_000_000_000;
  timers: Array<{ at: number; fn: () => void; id: number }> = [];
  #id = 0;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.#id;
    this.timers.push({ at: this.t + ms, fn, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  /** Moves time forward, running every timer that falls due (and letting promises settle between them). */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.t = Math.max(this.t, due.at);
      due.fn();
    }
    this.t = end;
    await settle();
  }
}

export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

export class MemoryLogger implements Logger {
  lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
  info(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'info', msg, fields });
  }
  warn(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'warn', msg, fields });
  }
  error(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'error', msg, fields });
  }
}
