// FNHOST_ISOLATION=process (docs/runtime.md "Isolation: a thread or the process"): the handler
// runs on the runtime's main thread, and the process is the unit that is ended and replaced.
// worker.ts is loaded in this thread instead of a worker thread; the two sides keep talking in
// the messages of protocol.ts through this channel, so supervisor.ts and worker.ts run the same
// code in both modes. What changes is only what a worker's end means: ending the handler's
// "worker" ends the process (whoever started it, the gateway or a Deployment, starts another).
//
// Why: a worker thread is a second V8 isolate and Node environment, ≈ 16 MiB of a runtime's
// ≈ 70 MiB idle RSS, and a thread hop each way on every call (bench/runtime.ts, P2b and P10).

/** The minimal EventEmitter-like surface of a MessagePort/Worker that supervisor.ts and worker.ts use. */
type Listener = (value: never) => void;

class Side {
  readonly #listeners = new Map<string, Set<Listener>>();
  peer!: Side;

  on(event: string, listener: Listener): this {
    let set = this.#listeners.get(event);
    if (set === undefined) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    return this;
  }

  once(event: string, listener: Listener): this {
    const wrapped = ((value: never) => {
      this.off(event, wrapped);
      listener(value);
    }) as Listener;
    return this.on(event, wrapped);
  }

  off(event: string, listener: Listener): this {
    this.#listeners.get(event)?.delete(listener);
    return this;
  }

  removeAllListeners(event?: string): this {
    if (event === undefined) this.#listeners.clear();
    else this.#listeners.delete(event);
    return this;
  }

  emit(event: string, value: unknown): void {
    const set = this.#listeners.get(event);
    if (set === undefined) return;
    for (const l of [...set]) (l as (v: unknown) => void)(value);
  }

  /**
   * Delivered to the other side at once, by reference (no structured clone: one heap): a
   * transferred ArrayBuffer simply changes hands. Synchronous on purpose: a whole response is
   * then written to the socket in the same turn as the handler's res.json (P2b).
   */
  postMessage(msg: unknown, _transfer?: readonly unknown[]): void {
    this.peer.emit('message', msg);
  }

  unref(): void {}
  ref(): void {}
}

/** The supervisor's end: looks like a Worker; terminate() ends the process (see onTerminate). */
export class InThreadWorker extends Side {
  readonly threadId = 0;
  /** Set by the supervisor: what ending this "worker" does (it cannot stop code on its own thread). */
  onTerminate: () => void = () => undefined;

  terminate(): Promise<number> {
    this.onTerminate();
    return Promise.resolve(0);
  }
}

/** worker.ts's end: the parentPort and workerData it would have in a thread. */
export interface InThreadSide {
  port: Side;
  data: unknown;
}

let current: InThreadSide | undefined;

/** The port and data worker.ts reads when it is not in a worker thread (undefined in a worker thread). */
export function inThreadSide(): InThreadSide | undefined {
  return current;
}

/**
 * Loads worker.ts in this thread with `data` as its workerData. Once per process: a module is
 * evaluated once, and the handler's globals (console, fetch, kv) are the process's from then on.
 */
export function startInThread(data: unknown, workerUrl: URL): InThreadWorker {
  if (current !== undefined) throw new Error('the handler already runs in this process (FNHOST_ISOLATION=process starts it once)');
  const worker = new InThreadWorker();
  const port = new Side();
  worker.peer = port;
  port.peer = worker;
  current = { port, data };
  import(workerUrl.href).catch((err: unknown) => {
    // worker.ts reports a module's load error itself; this is the runtime's own module failing.
    worker.emit('error', err);
    worker.emit('exit', 1);
  });
  return worker;
}
