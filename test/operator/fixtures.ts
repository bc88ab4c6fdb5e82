import type { Clock } from '@fnhost/core/clock.ts';
import { loadSettings } from '../../operator/src/settings.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import type { Settings } from '../../operator/src/types.ts';

export const TOKEN_KEY = 'unit-test-token-key-0123456789abcdef';

export function testSettings(env: Record<string, string> = {}): Settings {
  return loadSettings({ FNHOST_TOKEN_KEY: TOKEN_KEY, FNHOST_GATEWAY_URL: 'http://gateway.fnhost.svc:8080', FNHOST_PUBLIC_URL: 'https://fn.example.com', ...env }, { namespace: 'fnhost-system', host: 'test' });
}

export function fnResource(spec: Partial<FunctionResource['spec']> = {}, meta: Partial<FunctionResource['metadata']> = {}): FunctionResource {
  return {
    apiVersion: 'fnhost.dev/v1alpha1',
    kind: 'Function',
    metadata: { name: 'hello', namespace: 'team-a', uid: '0b5d8c9e-1111-4222-8333-944455556666', generation: 1, resourceVersion: '10', ...meta },
    spec: { code: 'export default (req, res) => res.json({ ok: true })', ...spec },
  };
}

/** A clock that moves only when told; timers fire in time order as it advances. */
export class FakeClock implements Clock {
  #now: number;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #seq = 0;
  constructor(start = 1_700_000_000_000) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.#seq;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.#timers) if (entry[1].at <= end && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.#timers.delete(next[0]);
      this.#now = next[1].at;
      next[1].fn();
    }
    this.#now = end;
  }
  get pending(): number {
    return this.#timers.size;
  }
}
