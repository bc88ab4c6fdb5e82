import { Pool } from 'undici';

// The gateway's keep-alive connections to the runtimes it calls: one undici Pool per origin
// (a runtime process, a pod), made on first use and destroyed when that runtime is gone.

export class UpstreamPools {
  readonly #pools = new Map<string, Pool>();
  readonly #connectionsPerOrigin: number;

  constructor(connectionsPerOrigin = 128) {
    this.#connectionsPerOrigin = connectionsPerOrigin;
  }

  /** The pool for origin; socketPath when the runtime is sandboxed (it listens on a Unix socket in its sandbox, having no network). */
  get(origin: string, socketPath: string | undefined): Pool {
    let pool = this.#pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, {
        connect: socketPath === undefined ? undefined : { socketPath },
        connections: this.#connectionsPerOrigin,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      this.#pools.set(origin, pool);
    }
    return pool;
  }

  /** The origin's runtime is gone: close its pool (ending any call still on it). */
  gone(origin: string): void {
    const pool = this.#pools.get(origin);
    if (pool !== undefined) {
      this.#pools.delete(origin);
      void pool.destroy().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
  }
}
