import { LRUCache } from 'lru-cache';
import { namespaceVerdict, needsLabels, type FunctionNamespaces, type NamespaceVerdict } from '@fnhost/core/function-namespaces.ts';
import { NamespaceNotAllowedError, type NamespaceGate } from '../access/control.ts';

// The namespace rule (core/function-namespaces.ts) with the labels it needs
// read from the API server: only when a selector is set and the namespace is
// not named, cached 30 s per namespace (bounded), so a label change takes
// effect within that and a call costs no API request in the steady state.

export const NAMESPACE_LABELS_TTL_MS = 30_000;

/** A namespace's labels; undefined when it does not exist. */
export type NamespaceLabels = (namespace: string) => Promise<Record<string, string> | undefined>;

export class KubeNamespaceGate implements NamespaceGate {
  readonly #rule: FunctionNamespaces;
  readonly #labels: LRUCache<string, { labels: Record<string, string> | undefined }>;

  constructor(rule: FunctionNamespaces, labelsOf: NamespaceLabels, options: { ttlMs?: number; now?: () => number } = {}) {
    this.#rule = rule;
    this.#labels = new LRUCache({
      max: 1024,
      ttl: options.ttlMs ?? NAMESPACE_LABELS_TTL_MS,
      ...(options.now === undefined ? {} : { perf: { now: options.now }, ttlResolution: 0 }),
      fetchMethod: async (namespace) => ({ labels: await labelsOf(namespace) }),
    });
  }

  async verdict(namespace: string): Promise<NamespaceVerdict> {
    if (!needsLabels(this.#rule, namespace)) return namespaceVerdict(this.#rule, namespace);
    const found = await this.#labels.fetch(namespace);
    return namespaceVerdict(this.#rule, namespace, found?.labels);
  }

  async check(namespace: string): Promise<void> {
    const verdict = await this.verdict(namespace);
    if (!verdict.allowed) throw new NamespaceNotAllowedError(verdict.reason);
  }

  async allows(namespace: string): Promise<boolean> {
    return (await this.verdict(namespace)).allowed;
  }
}
