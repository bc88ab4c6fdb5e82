import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FnhostError } from '@fnhost/core';

// The admin token guards /api/v1. It comes from FNHOST_TOKEN, or from
// FNHOST_DATA_DIR/token (generated at first start, mode 0600). Comparison is
// on SHA-256 digests with timingSafeEqual, so neither the length nor the
// content of the token leaks through timing. The token is never logged.
// Only the main listener takes it (access/authenticate.ts); the admin
// listener takes the panel session instead (docs/security.md).

export class UnauthorizedError extends FnhostError {
  constructor(message: string) {
    super('unauthorized', 401, message);
  }
}

export function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export function sameSecret(presented: string, expectedDigest: Buffer): boolean {
  return timingSafeEqual(digest(presented), expectedDigest);
}

export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

export interface AdminToken {
  digest: Buffer;
  /** Where it came from, for the start-up line (never the value). */
  source: 'FNHOST_TOKEN' | 'file';
  file: string;
}

export async function loadAdminToken(dataDir: string, fromEnv: string | undefined): Promise<AdminToken> {
  const file = join(dataDir, 'token');
  if (fromEnv !== undefined) return { digest: digest(fromEnv), source: 'FNHOST_TOKEN', file };
  await mkdir(dataDir, { recursive: true });
  let token: string;
  try {
    token = (await readFile(file, 'utf8')).trim();
    if (token === '') throw Object.assign(new Error('empty'), { code: 'ENOENT' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    token = 'fnh_' + randomBytes(24).toString('base64url');
    // 'wx' so two gateways starting at once cannot overwrite each other's token.
    try {
      await writeFile(file, token + '\n', { mode: 0o600, flag: 'wx' });
    } catch (writeErr) {
      if ((writeErr as NodeJS.ErrnoException).code !== 'EEXIST') throw writeErr;
      token = (await readFile(file, 'utf8')).trim();
    }
  }
  return { digest: digest(token), source: 'file', file };
}
