// The warm pool (docs/internal-protocol.md "Warm pool"): a runtime started with no function
// ("generic") waits for one authenticated request from loopback that names its function, and
// then runs exactly as a runtime started for that function: the same configuration parsed from
// the same variables, the same process environment, the same working directory, and the worker
// thread (with the function's heap limit, which is fixed when a worker is created) created only then.
import { ConfigError, intVar, isolationVar, loadConfig, socketVar, type Isolation, type RuntimeConfig } from './config.ts';
import * as limits from './limits.ts';
import { IMAGE_VARS, REMOTE_OWN_VARS, codeFileOf, isRemote } from './specialize-remote.ts';

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
  /** FNHOST_SPECIALIZE_REMOTE=1: a cluster's pool pod, specialized over the network (specialize-remote.ts). */
  remote: boolean;
}

export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/** A generic runtime when FNHOST_SPECIALIZE_TOKEN is set (and no function file); undefined otherwise. */
export function loadGenericConfig(env: NodeJS.ProcessEnv): GenericConfig | undefined {
  const token = env.FNHOST_SPECIALIZE_TOKEN;
  if (token === undefined) return undefined;
  const remote = isRemote(env);
  // A pool pod's image names a default function file; the operator sets it empty there.
  if (env.FNHOST_FUNCTION_FILE !== undefined && !(remote && env.FNHOST_FUNCTION_FILE === '')) {
    throw new ConfigError('set either FNHOST_FUNCTION_FILE (a runtime for one function) or FNHOST_SPECIALIZE_TOKEN (a generic runtime of the warm pool), not both');
  }
  if (token.length < MIN_TOKEN_LENGTH) throw new ConfigError(`FNHOST_SPECIALIZE_TOKEN must be at least ${MIN_TOKEN_LENGTH} characters`);
  if (env.FNHOST_HEALTH_PORT !== undefined) throw new ConfigError('FNHOST_HEALTH_PORT is not supported by a generic runtime (health is served on PORT)');
  const host = env.HOST?.trim() || '127.0.0.1';
  if (!remote && host !== 'localhost' && !isLoopbackAddress(host)) throw new ConfigError(`HOST="${host}": a generic runtime listens on loopback only (unless FNHOST_SPECIALIZE_REMOTE=1)`);
  const warmWorkerMemoryMiB = env.FNHOST_WARM_WORKER_MEMORY_MIB === undefined ? undefined : intVar(env, 'FNHOST_WARM_WORKER_MEMORY_MIB', 0, limits.MIN_MEMORY_MIB, limits.MAX_MEMORY_MIB);
  return { port: intVar(env, 'PORT', 8080, 0, 65535), host, socket: socketVar(env), token, warmWorkerMemoryMiB, isolation: isolationVar(env), remote };
}

export class SpecializeError extends Error {
  override name = 'SpecializeError';
}

export interface Specialization {
  config: RuntimeConfig;
  /** The whole process environment from now on: the function's variables plus the runtime's own PORT/HOST. */
  env: Record<string, string>;
  cwd: string | undefined;
  /** Remote only: inline code to write to config.functionFile before the start. */
  code?: string;
}

/**
 * The request body `{"env": {...}, "cwd": "/abs/dir"?}`: `env` is exactly the environment the
 * runtime would have been started with for this function, minus PORT and HOST (the generic
 * runtime's own). It goes through the same loadConfig as a start, so it is validated the same way.
 */
export function parseSpecialization(body: unknown, own: NodeJS.ProcessEnv, remote = false): Specialization {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new SpecializeError('the body must be a JSON object {"env": {...}, "cwd": "..."}');
  const { env, cwd, code, ...rest } = body as Record<string, unknown>;
  if (code !== undefined && !remote) rest.code = code;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new SpecializeError(`unknown field ${JSON.stringify(unknown[0])}`);
  if (typeof env !== 'object' || env === null || Array.isArray(env)) throw new SpecializeError('env must be an object of strings');
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== 'string') throw new SpecializeError(`env ${name} must be a string`);
    if (OWN_VARS.includes(name) || (remote && REMOTE_OWN_VARS.includes(name))) throw new SpecializeError(`env must not set ${name}: it belongs to the generic runtime`);
    vars[name] = value;
  }
  if (cwd !== undefined && (typeof cwd !== 'string' || !cwd.startsWith('/'))) throw new SpecializeError('cwd must be an absolute path');
  for (const name of ['PORT', 'HOST', 'FNHOST_RUNTIME_SOCKET', 'FNHOST_ISOLATION']) if (own[name] !== undefined) vars[name] = own[name];
  if (!remote) return { config: loadConfig(vars), env: vars, cwd };
  // Remote: the code is inline (`code`) or referenced (FNHOST_CODE_DIGEST), exactly one; the runtime names its file.
  if (code !== undefined && typeof code !== 'string') throw new SpecializeError('code must be a string (the module source)');
  const digest = vars.FNHOST_CODE_DIGEST;
  if ((code === undefined) === (digest === undefined)) throw new SpecializeError('send exactly one of code (inline) and env FNHOST_CODE_DIGEST (referenced code)');
  for (const name of ['FNHOST_GATEWAY_URL', 'FNHOST_EGRESS_PROXY']) if (own[name] !== undefined) vars[name] = own[name];
  // What the image gives every runtime (runtime-image/Dockerfile), as a function pod has it, unless the function sets it.
  for (const name of IMAGE_VARS) if (vars[name] === undefined && own[name] !== undefined) vars[name] = own[name];
  vars.FNHOST_FUNCTION_FILE = codeFileOf(code as string | undefined, digest);
  return { config: loadConfig(vars), env: vars, cwd, ...(code === undefined ? {} : { code: code as string }) };
}

/** Makes process.env exactly `target` (setenv/unsetenv underneath, so TZ, HOME and the like follow). */
export function replaceEnv(target: Record<string, string>): void {
  for (const name of Object.keys(process.env)) if (!Object.hasOwn(target, name)) delete process.env[name];
  for (const [name, value] of Object.entries(target)) if (process.env[name] !== value) process.env[name] = value;
}

/** Constant-time comparison of two secrets of any length (their SHA-256 digests are compared). */
export function sameSecret(presented: string, expected: string): boolean {
  const { createHash, timingSafeEqual } = process.getBuiltinModule('node:crypto');
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
