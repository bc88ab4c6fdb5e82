// The warm pool (docs/internal-protocol.md "Warm pool"): a runtime started with no function
// ("generic") waits for one authenticated request from loopback that names its function, and
// then runs exactly as a runtime started for that function: the same configuration parsed from
// the same variables, the same process environment, the same working directory, and the worker
// thread (with the function's heap limit, which is fixed when a worker is created) created only then.
import { ConfigError, intVar, isolationVar, loadConfig, socketVar, type Isolation, type RuntimeConfig } from './config.ts';
import * as limits from './limits.ts';

export const SPECIALIZE_PATH = '/_fnhost/specialize';
/** The credential travels in an x-fnhost-* header: the gateway never forwards those from callers. */
export const SPECIALIZE_HEADER = 'x-fnhost-specialize-token';
/** A function's env may hold 100 variables of 32 KiB; JSON escaping can grow them. */
export const MAX_SPECIALIZE_BODY_BYTES = 16 * 1024 * 1024;
const MIN_TOKEN_LENGTH = 32;

/** Variables that belong to the generic runtime itself and are fixed when it starts. */
const OWN_VARS = ['PORT', 'HOST', 'FNHOST_HEALTH_PORT', 'FNHOST_SPECIALIZE_TOKEN', 'FNHOST_RUNTIME_SOCKET', 'FNHOST_PARENT_PIPE', 'FNHOST_WARM_WORKER_MEMORY_MIB', 'FNHOST_ISOLATION'];

export interface GenericConfig {
  port: number;
  host: string;
  socket: string | undefined;
  token: string;
  /**
   * FNHOST_WARM_WORKER_MEMORY_MIB: start the function's worker thread ahead with this heap limit
   * (./spare-worker.ts); a function with another memory size gets a new one. Unset: none.
   */
  warmWorkerMemoryMiB: number | undefined;
  /** FNHOST_ISOLATION, fixed at the generic start: the spare is loaded in a thread or in this one. */
  isolation: Isolation;
}

export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/** A generic runtime when FNHOST_SPECIALIZE_TOKEN is set (and no function file); undefined otherwise. */
export function loadGenericConfig(env: NodeJS.ProcessEnv): GenericConfig | undefined {
  const token = env.FNHOST_SPECIALIZE_TOKEN;
  if (token === undefined) return undefined;
  if (env.FNHOST_FUNCTION_FILE !== undefined) {
    throw new ConfigError('set either FNHOST_FUNCTION_FILE (a runtime for one function) or FNHOST_SPECIALIZE_TOKEN (a generic runtime of the warm pool), not both');
  }
  if (token.length < MIN_TOKEN_LENGTH) throw new ConfigError(`FNHOST_SPECIALIZE_TOKEN must be at least ${MIN_TOKEN_LENGTH} characters`);
  if (env.FNHOST_HEALTH_PORT !== undefined) throw new ConfigError('FNHOST_HEALTH_PORT is not supported by a generic runtime (health is served on PORT)');
  const host = env.HOST?.trim() || '127.0.0.1';
  if (host !== 'localhost' && !isLoopbackAddress(host)) throw new ConfigError(`HOST="${host}": a generic runtime listens on loopback only`);
  const warmWorkerMemoryMiB = env.FNHOST_WARM_WORKER_MEMORY_MIB === undefined ? undefined : intVar(env, 'FNHOST_WARM_WORKER_MEMORY_MIB', 0, limits.MIN_MEMORY_MIB, limits.MAX_MEMORY_MIB);
  return { port: intVar(env, 'PORT', 8080, 0, 65535), host, socket: socketVar(env), token, warmWorkerMemoryMiB, isolation: isolationVar(env) };
}

export class SpecializeError extends Error {
  override name = 'SpecializeError';
}

export interface Specialization {
  config: RuntimeConfig;
  /** The whole process environment from now on: the function's variables plus the runtime's own PORT/HOST. */
  env: Record<string, string>;
  cwd: string | undefined;
}

/**
 * The request body `{"env": {...}, "cwd": "/abs/dir"?}`: `env` is exactly the environment the
 * runtime would have been started with for this function, minus PORT and HOST (the generic
 * runtime's own). It goes through the same loadConfig as a start, so it is validated the same way.
 */
export function parseSpecialization(body: unknown, own: NodeJS.ProcessEnv): Specialization {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new SpecializeError('the body must be a JSON object {"env": {...}, "cwd": "..."}');
  const { env, cwd, ...rest } = body as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new SpecializeError(`unknown field ${JSON.stringify(unknown[0])}`);
  if (typeof env !== 'object' || env === null || Array.isArray(env)) throw new SpecializeError('env must be an object of strings');
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== 'string') throw new SpecializeError(`env ${name} must be a string`);
    if (OWN_VARS.includes(name)) throw new SpecializeError(`env must not set ${name}: it belongs to the generic runtime`);
    vars[name] = value;
  }
  if (cwd !== undefined && (typeof cwd !== 'string' || !cwd.startsWith('/'))) throw new SpecializeError('cwd must be an absolute path');
  for (const name of ['PORT', 'HOST', 'FNHOST_RUNTIME_SOCKET', 'FNHOST_ISOLATION']) if (own[name] !== undefined) vars[name] = own[name];
  return { config: loadConfig(vars), env: vars, cwd };
}

/** Makes process.env exactly `target` (setenv/unsetenv underneath, so TZ, HOME and the like follow). */
export function replaceEnv(target: Record<string, string>): void {
  for (const name of Object.keys(process.env)) if (!Object.hasOwn(target, name)) delete process.env[name];
  for (const [name, value] of Object.entries(target)) if (process.env[name] !== value) process.env[name] = value;
}

/**
 * Constant-time comparison of two secrets of any length: every UTF-16 unit of the expected one is
 * compared whatever the presented one holds, with no early exit, so the time depends on the
 * expected secret's length (which the gateway fixes), not on where the two differ. In JavaScript,
 * not node:crypto's timingSafeEqual over SHA-256 digests as before: node:crypto costs a runtime
 * ≈ 2.4 MiB of idle RSS (docs/runtime.md "Where the memory goes"), and this is the only use of it
 * on the warm pool's path.
 */
export function sameSecret(presented: string, expected: string): boolean {
  let diff = presented.length ^ expected.length;
  // Past its end charCodeAt gives NaN, which `| 0` makes 0: a shorter presented secret is compared to its end and fails on the length.
  for (let i = 0; i < expected.length; i++) diff |= expected.charCodeAt(i) ^ (presented.charCodeAt(i) | 0);
  return diff === 0;
}
