import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStores } from '@fnhost/core/store/sqlite/index.ts';
import { digest } from '../../gateway/src/auth.ts';
import { loadConfig } from '../../gateway/src/config.ts';
import { startPlatform, type Platform } from '../../gateway/src/app.ts';
import { silentLogger } from '../../gateway/src/log.ts';
import { loadSandboxSettings } from '../../gateway/src/sandbox/settings.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import type { Stores } from '@fnhost/core';
import { pollUntil } from '../helpers/wait.ts';

// An in-process gateway on port 0 with a real SQLite file and real runtime
// processes; used where a test must reach inside (a test clock, a runtime's
// pid). The runtime is runtime-image/src/main.ts unless FNHOST_TEST_RUNTIME
// names another file.

export const TOKEN = 'test-admin-token-0123456789';

export interface Harness {
  platform: Platform;
  url: string;
  dataDir: string;
  api(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any; headers: Headers }>;
  createFunction(name: string, code: string, extra?: Record<string, unknown>): Promise<any>;
  invoke(id: string, path?: string, init?: RequestInit): Promise<Response>;
  /** Logs after the writer flushed. */
  logs(ref: string, query?: string): Promise<any>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  clock?: Clock;
  env?: Record<string, string>;
  /** Reuse this data folder (a restart); it is then kept at close. A fresh one, removed at close, otherwise. */
  dataDir?: string;
  /** Other stores than the data folder's SQLite file (MongoDB). */
  openStores?: () => Promise<Stores>;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'fnhost-gwtest-')));
  const config = loadConfig({ PORT: '0', FNHOST_DATA_DIR: dataDir, FNHOST_SHUTDOWN_GRACE_MS: '3000', ...options.env });
  const stores = options.openStores !== undefined ? await options.openStores() : openSqliteStores({ path: join(dataDir, 'fnhost.db') });
  const platform = await startPlatform({
    config,
    stores,
    adminToken: { digest: digest(TOKEN), source: 'FNHOST_TOKEN', file: join(dataDir, 'token') },
    logger: process.env.FNHOST_TEST_VERBOSE ? (await import('../../gateway/src/log.ts')).stdoutLogger : silentLogger,
    clock: options.clock,
    runtimeMain: process.env.FNHOST_TEST_RUNTIME,
    // FNHOST_SANDBOX=off and the other sandbox settings may come from options.env too.
    sandbox: loadSandboxSettings({ ...process.env, ...options.env }),
    forwardRuntimeOutput: process.env.FNHOST_TEST_VERBOSE !== undefined,
  });
  const url = platform.url;
  const api: Harness['api'] = async (method, path, body, token = TOKEN) => {
    const response = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // text
    }
    return { status: response.status, body: parsed, headers: response.headers };
  };
  return {
    platform,
    url,
    dataDir,
    api,
    async createFunction(name, code, extra = {}) {
      const r = await api('POST', '/api/v1/functions', { name, code, ...extra });
      if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
    invoke: (id, path = '', init) => fetch(`${url}/invoke/${id}${path}`, init),
    async logs(ref, query = '') {
      const r = await api('GET', `/api/v1/functions/${ref}/logs${query}`);
      if (r.status !== 200) throw new Error(`logs ${ref}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
    async close() {
      await platform.close();
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls until check() returns a truthy value or the deadline passes (the shared pollUntil, every 25 ms). */
export function waitFor<T>(check: () => Promise<T> | T, what: string, timeoutMs = 20_000): Promise<T> {
  return pollUntil(what, async () => check(), timeoutMs, 25);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// A test clock: time moves only when the test says so, and due timers run then.
export class TestClock implements Clock {
  current = Date.parse('2030-01-01T10:00:30.000Z');
  #timers = new Map<number, { at: number; fn: () => void }>();
  #id = 0;
  now() {
    return this.current;
  }
  setTimeout(fn: () => void, ms: number) {
    const id = ++this.#id;
    this.#timers.set(id, { at: this.current + ms, fn });
    return id;
  }
  clearTimeout(handle: unknown) {
    this.#timers.delete(handle as number);
  }
  advance(ms: number) {
    const target = this.current + ms;
    for (;;) {
      const due = [...this.#timers.entries()].filter(([, t]) => t.at <= target).sort((a, b) => a[1].at - b[1].at)[0];
      if (due === undefined) break;
      this.#timers.delete(due[0]);
      this.current = Math.max(this.current, due[1].at);
      due[1].fn();
    }
    this.current = target;
  }
}

