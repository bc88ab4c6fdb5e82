// Exit codes and the CLI's own error families. Every failure the user can cause
// or meet ends as one `error: ...` line on stderr (plus an optional hint line)
// and one of these exit codes; docs/cli.md lists them.

export const EXIT_OK = 0;
/** The server or the network failed, or the function under test answered 5xx. */
export const EXIT_FAILURE = 1;
/** The command line or a value in it is wrong (also when the server rejects a value as invalid). */
export const EXIT_USAGE = 2;
/** The server rejected the token (or none was found). */
export const EXIT_AUTH = 3;
/** The function (or another named thing) does not exist. */
export const EXIT_NOT_FOUND = 4;
/** The user answered no to a confirmation. */
export const EXIT_CANCELLED = 5;

/** Base of every error the CLI reports as a clean line instead of a stack trace. */
export class CliError extends Error {
  readonly exitCode: number;
  readonly hint: string | undefined;
  constructor(message: string, options: { exitCode: number; hint?: string; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.exitCode = options.exitCode;
    this.hint = options.hint;
  }
}

/** Wrong command line: unknown command or flag, missing argument, invalid value. */
export class UsageError extends CliError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, { ...options, exitCode: EXIT_USAGE });
  }
}

/** A local file or setting could not be read or written (the --file, the login file). */
export class LocalIoError extends CliError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, { ...options, exitCode: EXIT_FAILURE });
  }
}

export class CancelledError extends CliError {
  constructor(message: string) {
    super(message, { exitCode: EXIT_CANCELLED });
  }
}

/**
 * The handler could not be made into one module (docs/cli.md "Packages and bundling"): a missing
 * package, a native addon, code that does not parse, a bundle over the code limit. Exit 1 like the
 * server's `invalid_code`: the fix is in the code or its project, not in the command line.
 */
export class BundleError extends CliError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, { ...options, exitCode: EXIT_FAILURE });
  }
}

/**
 * function:deploy waited for the new code to serve on a cluster and it did not: the operator
 * refused the new spec (its reason), or the rollout did not finish within --wait-timeout.
 * The change itself is stored either way (kubectl describe function shows the rest).
 */
export class RolloutError extends CliError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, { ...options, exitCode: EXIT_FAILURE });
  }
}
