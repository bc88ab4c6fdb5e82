import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as vm from 'node:vm';
import { limits, validateCron, validateRoutes, validateTimezone } from '@fnhost/core';
import { nameFits, ownedNames, MAX_CRONJOB_NAME_LENGTH } from './names.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { functionIdOf } from '@fnhost/core/function-identity.ts';
import { LABEL_REPLAY_OF, isThrowaway } from '@fnhost/core/replay-throwaway.ts';
import type { Settings } from './types.ts';
import { checkCodeSource } from './code-ref.ts';
import { DEFAULT_MAX_REPLICAS, DEFAULT_MIN_REPLICAS, isCpuQuantity, millicores } from '@fnhost/core/scaling.ts';

// What the CRD schema cannot check (or an older CRD might not), checked before
// anything is applied. A problem becomes Ready=False with `reason` and
// `message`; the Function is not retried until its spec changes.

export interface SpecProblem {
  reason: string;
  message: string;
}

export function checkSpec(fn: FunctionResource, settings: Settings): SpecProblem | null {
  const { name } = fn.metadata;
  const s = fn.spec;
  if (!nameFits(name)) {
    return {
      reason: 'NameTooLong',
      message: `name "${name}" is ${name.length} characters; at most ${limits.MAX_FUNCTION_NAME_LENGTH} are allowed so that the CronJob "${ownedNames(name).cronJob}" fits ${MAX_CRONJOB_NAME_LENGTH} characters`,
    };
  }
  const source = checkCodeSource(fn);
  if (source !== null) return source;
  if (s?.codeRef == null) {
    if (typeof s?.code !== 'string' || s.code.trim() === '') {
      return { reason: 'InvalidCode', message: 'spec.code is empty: it must be the source of a JavaScript module that exports a handler (or spec.codeRef: {digest, size} of uploaded code)' };
    }
    const bytes = Buffer.byteLength(s.code);
    if (bytes > limits.MAX_CODE_BYTES) {
      return { reason: 'CodeTooLarge', message: `spec.code is ${bytes} bytes; the limit is ${limits.MAX_CODE_BYTES} bytes (larger code goes by reference: spec.codeRef, fnhost bundle --push)` };
    }
  }
  const timeout = s.timeoutSeconds ?? limits.DEFAULT_TIMEOUT_SECONDS;
  if (timeout > settings.maxTimeoutSeconds) {
    return {
      reason: 'TimeoutAboveMaximum',
      message: `spec.timeoutSeconds is ${timeout}; this platform allows at most ${settings.maxTimeoutSeconds} seconds (operator setting FNHOST_MAX_TIMEOUT_SECONDS)`,
    };
  }
  try {
    validateRoutes(s.routes);
  } catch (err) {
    return { reason: 'InvalidRoutes', message: (err as Error).message };
  }
  for (const v of s.env ?? []) {
    if (v.name.startsWith('FNHOST_')) return { reason: 'InvalidEnv', message: `env name "${v.name}" is reserved: the FNHOST_ prefix belongs to the platform` };
  }
  return checkScaling(fn) ?? checkCpu(fn, settings);
}

/**
 * A throwaway version (replay --code) runs with its original's functionId, so its pod gets that
 * function's runtime token and KV. Only a version of a Function of the same namespace may: the
 * label must name an existing Function there (`original`, null when there is none) whose id is
 * the one it carries. Otherwise a Function labelled by hand could take any function's identity
 * quietly (the gateway keeps throwaways out of its listings).
 */
export function checkThrowaway(fn: FunctionResource, original: FunctionResource | null): SpecProblem | null {
  if (!isThrowaway(fn)) return null;
  const of = fn.metadata.labels?.[LABEL_REPLAY_OF];
  if (!of || original === null || isThrowaway(original)) {
    return { reason: 'InvalidThrowaway', message: `a throwaway Function must name an existing Function of its namespace in ${LABEL_REPLAY_OF} (it names "${of ?? ''}")` };
  }
  if (functionIdOf(original) !== functionIdOf(fn)) {
    return { reason: 'InvalidThrowaway', message: `a throwaway Function runs as the Function it is a version of: spec.functionId must be ${of}'s id ${functionIdOf(original)}, not ${functionIdOf(fn)}` };
  }
  return null;
}

/**
 * The schedule alone: a problem withholds only the CronJob (the function still
 * serves HTTP) and shows as the condition Scheduled=False InvalidSchedule.
 */
export function checkSchedule(fn: FunctionResource): SpecProblem | null {
  const schedule = fn.spec.schedule;
  if (!schedule) return null;
  try {
    validateTimezone(schedule.timezone ?? 'UTC');
    validateCron(schedule.cron, schedule.timezone ?? 'UTC');
  } catch (err) {
    return { reason: 'InvalidSchedule', message: (err as Error).message };
  }
  return null;
}

function checkScaling(fn: FunctionResource): SpecProblem | null {
  const s = fn.spec.scaling;
  if (!s) return null;
  const min = s.minReplicas ?? DEFAULT_MIN_REPLICAS;
  const max = s.maxReplicas ?? DEFAULT_MAX_REPLICAS;
  if (min > max) return { reason: 'InvalidScaling', message: `spec.scaling.minReplicas (${min}) is above spec.scaling.maxReplicas (${max})` };
  if (min > 0 && fn.spec.scaleToZero) {
    return { reason: 'InvalidScaling', message: `spec.scaleToZero asks for zero pods when idle but spec.scaling.minReplicas is ${min}: set minReplicas to 0 (or remove scaleToZero)` };
  }
  return null;
}

function checkCpu(fn: FunctionResource, settings: Settings): SpecProblem | null {
  const cpu = fn.spec.cpu;
  if (!cpu) return null;
  for (const [field, value] of [['request', cpu.request], ['limit', cpu.limit]] as const) {
    if (value !== undefined && !isCpuQuantity(value)) return { reason: 'InvalidCpu', message: `spec.cpu.${field} "${value}" is not a CPU quantity such as 250m or 0.5` };
  }
  const max = millicores(settings.cpuLimit);
  for (const [field, value] of [['request', cpu.request], ['limit', cpu.limit]] as const) {
    if (value !== undefined && millicores(value) > max) {
      return { reason: 'CpuAboveMaximum', message: `spec.cpu.${field} is ${value}; this platform allows at most ${settings.cpuLimit} per function (operator setting FNHOST_CPU_LIMIT)` };
    }
  }
  if (cpu.request !== undefined && cpu.limit !== undefined && millicores(cpu.request) > millicores(cpu.limit)) {
    return { reason: 'InvalidCpu', message: `spec.cpu.request (${cpu.request}) is above spec.cpu.limit (${cpu.limit})` };
  }
  return null;
}

const CJS_PARAMS = ['exports', 'require', 'module', '__filename', '__dirname'];

export type CodeChecker = (code: string) => Promise<SpecProblem | null>;

/**
 * Parses the code the way the runtime's Node will load it: as CommonJS when
 * that compiles, otherwise as an ES module. The module parse runs in a short
 * `node --check` child, because node:vm parses modules only behind a flag.
 * Results are cached by the code's hash, so a Function is parsed once per
 * version of its code.
 */
export function makeCodeChecker(options: { nodePath?: string; timeoutMs?: number; cacheSize?: number } = {}): CodeChecker {
  const cache = new Map<string, SpecProblem | null>();
  const maxEntries = options.cacheSize ?? 1000;
  return async (code) => {
    const hash = createHash('sha256').update(code).digest('hex');
    if (cache.has(hash)) return cache.get(hash)!;
    const result = await parse(code, options.nodePath ?? process.execPath, options.timeoutMs ?? 10_000);
    if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
    cache.set(hash, result);
    return result;
  };
}

async function parse(code: string, nodePath: string, timeoutMs: number): Promise<SpecProblem | null> {
  let scriptError: Error;
  try {
    vm.compileFunction(code, CJS_PARAMS, { filename: 'index.js' });
    return null;
  } catch (err) {
    scriptError = err as Error;
  }
  const moduleError = await checkModule(code, nodePath, timeoutMs);
  if (moduleError === null) return null;
  // Name the error of the kind the code was meant to be.
  const looksLikeModule = /\b(import|export)\b/.test(code);
  const message = looksLikeModule ? moduleError : `${scriptError.name}: ${scriptError.message}`;
  return { reason: 'CodeDoesNotParse', message: `spec.code does not parse: ${message}` };
}

function checkModule(code: string, nodePath: string, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const child = spawn(nodePath, ['--check', '--input-type=module', '-'], { stdio: ['pipe', 'ignore', 'pipe'], timeout: timeoutMs });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 16_384) stderr += chunk;
    });
    child.on('error', (err) => resolve(`could not run the parser: ${err.message}`));
    child.on('close', (code) => {
      if (code === 0) return resolve(null);
      const lines = stderr.split('\n');
      const where = lines[0]?.match(/^\[stdin\]:(\d+)/)?.[1];
      const error = lines.find((l) => /^\w*Error\b/.test(l)) ?? 'unknown syntax error';
      resolve(where ? `${error} (line ${where})` : error);
    });
    child.stdin.on('error', () => {});
    child.stdin.end(code);
  });
}
