import { CliError, EXIT_AUTH, EXIT_FAILURE, EXIT_NOT_FOUND, EXIT_USAGE } from '../errors.ts';

// One class per way a call to the management API can fail. Each keeps the
// server's URL, the HTTP status and the API's error code (when there is one)
// and the underlying error as `cause`, and maps to an exit code.

export interface ApiErrorDetails {
  /** The server's base URL, named in messages. */
  url: string;
  status?: number;
  /** The API's machine-readable code from `{ error, message }`. */
  code?: string;
  hint?: string;
  cause?: unknown;
}

export class ApiError extends CliError {
  readonly url: string;
  readonly status: number | undefined;
  readonly code: string | undefined;
  constructor(message: string, exitCode: number, details: ApiErrorDetails) {
    super(message, { exitCode, hint: details.hint, cause: details.cause });
    this.url = details.url;
    this.status = details.status;
    this.code = details.code;
  }
}

/** No HTTP answer at all: refused, unknown host, reset, timed out. */
export class ApiConnectionError extends ApiError {
  constructor(message: string, details: ApiErrorDetails) {
    super(message, EXIT_FAILURE, details);
  }
}

/** 401/403: the token is missing or wrong. */
export class ApiAuthError extends ApiError {
  constructor(message: string, details: ApiErrorDetails) {
    super(message, EXIT_AUTH, details);
  }
}

/** 404: the function (or route) does not exist. */
export class ApiNotFoundError extends ApiError {
  constructor(message: string, details: ApiErrorDetails) {
    super(message, EXIT_NOT_FOUND, details);
  }
}

/** 400/413/422: the server rejected a value; like a usage error, the fix is in the command line. */
export class ApiValidationError extends ApiError {
  constructor(message: string, details: ApiErrorDetails) {
    super(message, EXIT_USAGE, details);
  }
}

/** 400 invalid_code: the function's code does not parse, exports no handler or throws while loading; the fix is in the file (or its env), not the command line. */
export class ApiInvalidCodeError extends ApiError {
  constructor(message: string, details: ApiErrorDetails) {
    super(message, EXIT_FAILURE, details);
  }
}

/** 409: a name that is taken, or a change that conflicts with the current state. */
export class ApiConflictError extends ApiError {
  constructor(message: string, details: ApiErrorDetails) {
    super(message, EXIT_FAILURE, details);
  }
}

/** 5xx, or any other status the CLI does not expect. */
export class ApiServerError extends ApiError {
  constructor(message: string, details: ApiErrorDetails) {
    super(message, EXIT_FAILURE, details);
  }
}

/** The server answered, but not with what the API promises (not JSON, too large). */
export class ApiProtocolError extends ApiError {
  constructor(message: string, details: ApiErrorDetails) {
    super(message, EXIT_FAILURE, details);
  }
}

/** The URL answers, but is not the root of an fnhost API (a path such as /admin, the admin panel's port): a setting to fix. */
export class ApiWrongUrlError extends ApiError {
  constructor(message: string, details: ApiErrorDetails) {
    super(message, EXIT_USAGE, details);
  }
}
