// A runtime's credentials (its runtime token; a generic runtime's specialization
// token) reach it over its stdin, not in its environment (issue 28). An
// environment is what every process it starts inherits, and the bytes a
// process was started with stay readable as /proc/<pid>/environ: in a sandbox
// that is bubblewrap's init, PID 1 inside, running as the handler's uid. The
// runtime reads the lines before anything else (runtime-image/src/hide-secrets.ts,
// docs/internal-protocol.md "Starting a runtime").

/** Variables that are credentials: sent over stdin, never in the spawn's environment. */
export const SECRET_VARS: readonly string[] = ['FNHOST_RUNTIME_TOKEN', 'FNHOST_SPECIALIZE_TOKEN'];
/** Tells the runtime to read `NAME=value` lines from stdin up to an empty line. */
export const SECRETS_ON_STDIN = 'FNHOST_SECRETS_ON_STDIN';

export class SecretValueError extends Error {
  override name = 'SecretValueError';
}

/** The environment without its credentials, and the stdin message carrying them (undefined: none). */
export function secretsApart(env: Record<string, string>): { env: Record<string, string>; message: string | undefined } {
  const rest: Record<string, string> = {};
  const lines: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!SECRET_VARS.includes(name)) {
      rest[name] = value;
      continue;
    }
    // A line per secret: a newline or NUL in one would cut it (tokens are hex or base64url).
    if (/[\n\r\0]/.test(value) || value === '') throw new SecretValueError(`${name} must be one non-empty line`);
    lines.push(`${name}=${value}\n`);
  }
  if (lines.length === 0) return { env: rest, message: undefined };
  return { env: { ...rest, [SECRETS_ON_STDIN]: '1' }, message: `${lines.join('')}\n` };
}
