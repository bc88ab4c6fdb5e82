import { readFileSync, statSync } from 'node:fs';

// Secrets as files: for each secret setting NAME, NAME_FILE may name a file
// that holds its value instead (a Kubernetes Secret mounted as a volume, as
// the chart does), the convention of the official database images. A file
// keeps the secret out of the process environment, which child processes
// inherit and /proc/<pid>/environ shows, and lets the kubelet update it.
// Messages name the variable and the path, never the value.

export class SecretFileError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SecretFileError';
  }
}

/** Largest secret file read: a connection string or a token, never more. */
export const MAX_SECRET_FILE_BYTES = 64 * 1024;

/**
 * A copy of env in which each NAME whose NAME_FILE is set holds that file's
 * content (one trailing line break removed, as a Secret written by hand has).
 * Setting both NAME and NAME_FILE is an error: which one wins would be a guess.
 */
export function resolveSecretFiles(env: Record<string, string | undefined>, names: readonly string[]): Record<string, string | undefined> {
  const out = { ...env };
  for (const name of names) {
    const fileVar = `${name}_FILE`;
    const path = env[fileVar]?.trim();
    if (path === undefined || path === '') continue;
    if (env[name] !== undefined && env[name] !== '') throw new SecretFileError(`${name} and ${fileVar} are both set: set one of them`);
    let content: Buffer;
    try {
      // A regular file of bounded size: never a device or a FIFO that would block or never end.
      const stat = statSync(path);
      if (!stat.isFile()) throw new SecretFileError(`${fileVar}=${path} is not a regular file`);
      if (stat.size > MAX_SECRET_FILE_BYTES) throw new SecretFileError(`${fileVar}=${path} is larger than ${MAX_SECRET_FILE_BYTES} bytes: not a secret value`);
      content = readFileSync(path);
    } catch (err) {
      if (err instanceof SecretFileError) throw err;
      throw new SecretFileError(`${fileVar}=${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err });
    }
    const value = content.toString('utf8').replace(/\r?\n$/, '');
    if (value === '') throw new SecretFileError(`${fileVar}=${path} is empty`);
    out[name] = value;
  }
  return out;
}
