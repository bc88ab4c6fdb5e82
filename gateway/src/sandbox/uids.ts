// One uid per running sandbox when the gateway runs as root (docs/sandbox.md "Users"). A uid is
// held from the runtime's start until its last process is gone (the PID namespace ends with its
// init), so two live runtimes never share one: RLIMIT_NPROC, signals and /proc access are per
// real uid. A warm-pool sandbox gets its uid when it starts and keeps it for the function it is
// specialized to; a uid is not derived from the function, which would let two functions collide.

export class UidsExhaustedError extends Error {
  override name = 'UidsExhaustedError';
}

export class UidAllocator {
  readonly #base: number;
  readonly #count: number;
  readonly #used = new Set<number>();
  #next = 0;

  constructor(base: number, count: number) {
    this.#base = base;
    this.#count = count;
  }

  /** The next free uid, round robin (a uid just released is the last to be handed out again). */
  take(): number {
    for (let i = 0; i < this.#count; i++) {
      const uid = this.#base + ((this.#next + i) % this.#count);
      if (this.#used.has(uid)) continue;
      this.#used.add(uid);
      this.#next = (this.#next + i + 1) % this.#count;
      return uid;
    }
    throw new UidsExhaustedError(`all ${this.#count} sandbox uids from ${this.#base} are in use (FNHOST_SANDBOX_UID_COUNT)`);
  }

  release(uid: number): void {
    this.#used.delete(uid);
  }

  get inUse(): number {
    return this.#used.size;
  }
}
