import { createHash } from 'node:crypto';
import { INLINE_CODE_BYTES } from '@fnhost/core/limits.ts';
import type { ApiClient } from '../api/client.ts';
import type { CodeBody } from '../api/types.ts';
import type { CommandContext } from './spec.ts';

// How create and deploy send a bundle: inline up to INLINE_CODE_BYTES (256 KiB: the Function
// stays under client-side kubectl apply's annotation, and kubectl users edit small code in
// place), else uploaded by digest first (only when the server lacks it) and named by code_ref.

export function codeDigest(bytes: Uint8Array): string {
  return 'sha256:' + createHash('sha256').update(bytes).digest('hex');
}

/** MiB with one decimal, for the one line an upload prints. */
export function mebibytes(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

export async function codeBody(ctx: CommandContext, client: ApiClient, code: string): Promise<CodeBody> {
  const bytes = Buffer.from(code);
  if (bytes.length <= INLINE_CODE_BYTES) return { code };
  return { code_ref: await pushCode(ctx, client, bytes) };
}

/** Uploads the bytes unless the server has them for this namespace; one line on stderr when it uploads. */
export async function pushCode(ctx: CommandContext, client: ApiClient, bytes: Buffer): Promise<{ digest: string; size: number }> {
  const digest = codeDigest(bytes);
  if (!(await client.codeExists(digest))) {
    ctx.io.stderr.write(`Uploading ${mebibytes(bytes.length)} of code (${digest})\n`);
    await client.uploadCode(digest, bytes);
  }
  return { digest, size: bytes.length };
}
