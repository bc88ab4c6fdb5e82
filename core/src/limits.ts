// Every input has a size limit. These are the platform's documented limits
// (README "Limits"); the gateway, the CLI and the CRD schema all use them.

/** Function names are DNS-1123 labels this long at most, so owned Kubernetes names (`fn-<name>-cron`) fit the 52-character CronJob limit. */
export const MAX_FUNCTION_NAME_LENGTH = 40;
/**
 * Module source size: the bundle the CLI makes, its inline source map included (docs/cli.md
 * "Packages and bundling"). 768 KiB holds a handler with common SDKs (a validator, an HTTP or
 * database client: tens to a few hundred KiB bundled, the map adding about half again) and stays
 * below the 1 MiB a ConfigMap holds and under etcd's 1.5 MiB object with room for the Function's
 * other fields. Over ~200 KiB a Function no longer fits the 256 KiB annotation client-side
 * `kubectl apply` copies it into: docs/cluster-mode.md says to apply with --server-side.
 */
export const MAX_CODE_BYTES = 768 * 1024;
/**
 * Code stored apart from the function, by digest (a `code_ref`, core/src/code/): the bundle the CLI
 * makes with its source map, up to 50 MiB, as Lambda takes zipped. Neither etcd nor a ConfigMap
 * holds it (one machine: the data folder; cluster mode: MongoDB GridFS).
 */
export const MAX_CODE_REF_BYTES = 50 * 1024 * 1024;
/**
 * The CLI sends code larger than this as a reference (uploaded first) rather than inline, so a
 * Function resource stays under the 256 KiB annotation client-side `kubectl apply` writes, and
 * kubectl users keep editing small code in place. The API still takes inline code up to MAX_CODE_BYTES.
 */
export const INLINE_CODE_BYTES = 256 * 1024;
/** Invocation request body. */
export const MAX_INVOKE_BODY_BYTES = 6 * 1024 * 1024;
/**
 * Management API JSON bodies (code is the largest field): twice the code limit, since JSON
 * escapes a minified bundle's quotes and backslashes and \u-escapes control characters.
 */
export const MAX_API_BODY_BYTES = 2 * MAX_CODE_BYTES;

export const DEFAULT_TIMEOUT_SECONDS = 30;
/** The platform maximum; a setting (FNHOST_MAX_TIMEOUT_SECONDS) may lower it. */
export const MAX_TIMEOUT_SECONDS = 900;
/**
 * The bound of a module's load (its top level), apart from the calls' time limit: what the
 * create's load check has always waited (the start timeout). Lambda bounds its init apart from
 * the invocation timeout (10 s); 15 s keeps the create's check and a restart's load one bound.
 * A function's time limit, when longer, is its bound instead: no load gets less than it had.
 */
export const DEFAULT_LOAD_TIMEOUT_SECONDS = 15;
export const DEFAULT_MEMORY_MIB = 128;
export const MIN_MEMORY_MIB = 32;
export const MAX_MEMORY_MIB = 4096;

export const DEFAULT_LOG_PAGE_LIMIT = 50;
export const MAX_LOG_PAGE_LIMIT = 1000;
export const MAX_RETENTION_DAYS = 3650;
export const MAX_RETENTION_COUNT = 10_000_000;

export const MAX_ENV_VARS = 100;
export const MAX_ENV_VALUE_BYTES = 32 * 1024;
export const MAX_ROUTES = 50;
export const MAX_ROUTE_LENGTH = 256;

export const MAX_KV_KEY_BYTES = 512;
export const MAX_KV_VALUE_BYTES = 256 * 1024;
/** A KV TTL is a positive integer of seconds, at most a year. */
export const MAX_KV_TTL_SECONDS = 365 * 24 * 3600;
export const MAX_KV_LIST_KEYS = 1000;

export const MAX_POLICY_PATTERNS = 500;

/** A recorded request's or response's body is kept up to this many bytes (function setting record_requests.max_body_bytes, which may lower it). */
export const MAX_RECORD_BODY_BYTES = 64 * 1024;
export const MAX_REDACT_HEADERS = 50;
export const MAX_REDACT_JSON_PATHS = 50;
export const MAX_REDACT_JSON_PATH_LENGTH = 256;
