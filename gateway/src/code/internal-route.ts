import type Router from '@koa/router';
import type { Context } from 'koa';
import { Readable } from 'node:stream';
import { isDigest, type CodeStore } from '@fnhost/core';
import type { FunctionService } from '../functions/service.ts';
import { CodeFetchBoundError, fetchCharge, type CodeFetchBound } from './fetch-bound.ts';

// GET /internal/v1/code/{digest}: a runtime fetching its function's code by digest (cluster
// mode's pods; docs/internal-protocol.md). Served only when the token's function references that
// digest (its current code, or what `extraDigests` adds: a throwaway's), read in the function's
// own namespace; anything else is the one 404, so a token opens no other code. Bounded per
// function (./fetch-bound.ts): streams at once and bytes a second, 429 with Retry-After past them.

export interface CodeInternalDeps {
  store: CodeStore;
  functions: FunctionService;
  /** Further digests a function's runtimes may read (cluster mode: its rollout's or replay throwaway's). */
  extraDigests?: (functionId: string) => Iterable<string>;
  /** The per-function bound on fetches (./fetch-bound.ts), and who is told of a refusal (metrics, one log line). */
  bound?: { fetches: CodeFetchBound; now: () => number; onRefused: (functionId: string, err: CodeFetchBoundError) => void };
}

function referenced(deps: CodeInternalDeps, functionId: string, digest: string): boolean {
  const fn = deps.functions.byId(functionId);
  if (fn === undefined) return false;
  if (fn.code_ref?.digest === digest) return true;
  for (const d of deps.extraDigests?.(functionId) ?? []) if (d === digest) return true;
  return false;
}

/** Adds the route to the internal router (its token check has run: ctx.state.functionId). */
export function addCodeRoute(router: Router, deps: CodeInternalDeps): void {
  router.get('/code/:digest', async (ctx: Context) => {
    const digest = ctx.params.digest!;
    const functionId = ctx.state.functionId as string;
    const bound = deps.bound;
    const refusing = (err: unknown): never => {
      if (bound !== undefined && err instanceof CodeFetchBoundError) {
        bound.onRefused(functionId, err);
        ctx.set('Retry-After', String(err.retryAfterSeconds));
      }
      throw err;
    };
    // A function past its bound is refused before its blob is even looked up.
    try {
      bound?.fetches.check(functionId, bound.now());
    } catch (err) {
      refusing(err);
    }
    const fn = deps.functions.byId(functionId);
    const mine = fn !== undefined && isDigest(digest) && referenced(deps, functionId, digest);
    const info = mine ? await deps.store.stat(fn!.namespace, digest) : null;
    // Charged (by the blob's size) before anything is opened: a refused fetch costs no read.
    let release: () => void = () => undefined;
    if (bound !== undefined) {
      try {
        release = bound.fetches.admit(functionId, fetchCharge(info?.size), bound.now());
      } catch (err) {
        refusing(err);
      }
    }
    let source: Awaited<ReturnType<CodeStore['openRead']>> = null;
    try {
      source = mine ? await deps.store.openRead(fn!.namespace, digest) : null;
    } finally {
      if (source === null) release();
    }
    if (source === null) {
      ctx.status = 404;
      ctx.body = { error: 'not_found', message: `code ${digest.slice(0, 80)} is not this function's` };
      return;
    }
    // The slot is held while the stream runs: until the response ends or its connection closes.
    ctx.res.once('close', release);
    ctx.type = 'application/octet-stream';
    if (info !== null) ctx.length = info.size;
    ctx.set('x-fnhost-code-digest', digest);
    ctx.body = source instanceof Readable ? source : Readable.from(source);
  });
}
