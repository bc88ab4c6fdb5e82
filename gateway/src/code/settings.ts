import { DEFAULT_CODE_GC_GRACE_MS } from '@fnhost/core';

// The code store's settings (docs/gateway.md "The code store"), read by config.ts.

export interface CodeSettings {
  /** FNHOST_CODE_STORE_MAX_BYTES: the bytes of all stored code (distinct blobs). */
  maxTotalBytes: number;
  /** FNHOST_CODE_STORE_NAMESPACE_MAX_BYTES: the bytes of the code one namespace uploaded (each blob whole). */
  maxNamespaceBytes: number;
  /** FNHOST_CODE_UPLOADS_MAX_CONCURRENT: uploads streaming at once per gateway (each may hold a temp file up to 50 MiB). */
  maxConcurrentUploads: number;
  /** FNHOST_CODE_GC_GRACE_SECONDS: unreferenced code is kept this long after its last upload or use. */
  gcGraceMs: number;
  /** FNHOST_CODE_GC_INTERVAL_SECONDS: how often one machine's GC runs. */
  gcIntervalMs: number;
}

const GIB = 1024 ** 3;

/**
 * 5 GiB in all, 1 GiB a namespace: a hundred 50 MiB bundles, or a thousand typical ones; and
 * (cluster mode) no team fills the shared MongoDB alone. Lambda bounds code storage per account
 * (75 GB); the bound here is the data folder's or database's share a platform operator expects
 * code to take. Four uploads at once: a few CI deploys in parallel, with at most 200 MiB of temp
 * files. GC's grace is an hour (an upload made just before its create, or before a GitOps
 * apply, is kept), run every ten minutes.
 */
export const CODE_SETTING_DEFAULTS: CodeSettings = {
  maxTotalBytes: 5 * GIB,
  maxNamespaceBytes: 1 * GIB,
  maxConcurrentUploads: 4,
  gcGraceMs: DEFAULT_CODE_GC_GRACE_MS,
  gcIntervalMs: 10 * 60 * 1000,
};
