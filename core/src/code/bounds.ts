import type { CodeBounds } from '../stores.ts';
import { CodeStoreFullError } from './errors.ts';

// The code store's byte bounds (docs/gateway.md "The code store"), decided alike by both stores.

/** What a store knows when an upload grows or commits. */
export interface CodeUsageNow {
  /** Bytes of distinct blobs stored. */
  totalBytes: number;
  /** Bytes of the blobs the namespace uploaded. */
  namespaceBytes: number;
  /** Bytes other uploads in flight hold now (this process's, as temp files or chunks), and those of the namespace: counted against the bounds, so parallel uploads cannot pass them together. */
  inFlightBytes: number;
  inFlightNamespaceBytes: number;
  /** The blob is stored already (adds nothing to the total). */
  blobStored: boolean;
  /** The namespace uploaded it already (adds nothing to its bytes). */
  namespaceHas: boolean;
}

/** Throws CodeStoreFullError when storing `size` more bytes would pass a bound. */
export function checkCodeBounds(u: CodeUsageNow, size: number, bounds: CodeBounds, namespace: string): void {
  const total = u.totalBytes + u.inFlightBytes;
  if (!u.blobStored && total + size > bounds.maxTotalBytes) throw new CodeStoreFullError('total', total, size, bounds.maxTotalBytes, namespace);
  const ns = u.namespaceBytes + u.inFlightNamespaceBytes;
  if (!u.namespaceHas && ns + size > bounds.maxNamespaceBytes) throw new CodeStoreFullError('namespace', ns, size, bounds.maxNamespaceBytes, namespace);
}
