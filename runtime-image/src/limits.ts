// Copied from core/src/limits.ts: the runtime imports nothing of fnhost (docs/internal-protocol.md),
// so these numbers are repeated here. Keep them equal.
export const MAX_INVOKE_BODY_BYTES = 6 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 30_000;
export const MAX_TIMEOUT_MS = 900_000;
export const DEFAULT_LOAD_TIMEOUT_MS = 15_000;
export const DEFAULT_MEMORY_MIB = 128;
export const MIN_MEMORY_MIB = 32;
export const MAX_MEMORY_MIB = 4096;
export const MAX_ROUTES = 50;
export const MAX_ROUTE_LENGTH = 256;
export const MAX_KV_KEY_BYTES = 512;
export const MAX_KV_VALUE_BYTES = 256 * 1024;
export const MAX_KV_TTL_SECONDS = 365 * 24 * 3600;
