import { randomBytes } from 'node:crypto';
import { bearerToken, sameSecret, secretDigest as digest } from '@fnhost/core/bearer.ts';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FnhostError } from '@fnhost/core';

// The admin token guards /api/v1. It comes from FNHOST_TOKEN, or from
// FNHOST_DATA_DIR/token (generated at first start, mode 0600). Comparison is
// in constant time (core/src/bearer.ts). The token is never logged.
// Only the main listener takes it (access/authenticate.ts); the admin
// listener takes the panel session instead (docs/security.md).

export class UnauthorizedError extends FnhostError {
  constructor(message: string) {
    super('unauthorized', 401, message);
  }
}

export { secretDigest as digest, sameSecret, bearerToken } from '@fnhost/core/bearer.ts';

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
