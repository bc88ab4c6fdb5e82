import { CALLBACK_MAX_ATTEMPTS } from '@fnhost/core/async-callback.ts';
import { MAX_INVOKE_BODY_BYTES, MAX_TIMEOUT_SECONDS } from '@fnhost/core/limits.ts';
import { UsageError } from '../errors.ts';
import type { ApiAsyncCall } from '../api/types.ts';
import { createPainter } from '../format/color.ts';
import { oneLine, printable } from '../format/text.ts';
import { functionRef, intOption, listOption, printJson, printLines, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

// Asynchronous invocation from the CLI (docs/async.md):
//   function:async <fn>                  the queued, running and dead calls
//   function:async:retry <fn> <id|--all> requeue dead calls
//   function:invoke <fn> [--async] ...   a call through the public path, as a caller makes it

const METHOD = /^[A-Za-z]{1,16}$/;
const ASYNC_ID = /^async_[A-Za-z0-9_-]{22}$/;
const DEFAULT_LIST = 100;
const STATES = ['queued', 'running', 'succeeded', 'failed', 'dead'];

/** --state queued,dead (default: queued, running and dead; all: every state, to see a finished call's callback). */
export function parseStateFlag(raw: string | undefined): string[] {
  if (raw === undefined) return ['queued', 'running', 'dead'];
  if (raw === 'all') return STATES;
  const states = raw.split(',').map((s) => s.trim());
  for (const s of states) if (!STATES.includes(s)) throw new UsageError(`--state "${s.slice(0, 40)}" is not one of ${STATES.join(', ')} (or all)`);
  return [...new Set(states)];
}

export function asyncLines(calls: readonly ApiAsyncCall[]): string[] {
  if (calls.length === 0) return ['No queued, running or dead calls.'];
  const lines = ['ASYNC ID                        STATE      ATTEMPTS  ACCEPTED                  CALLBACK          LAST'];
  for (const c of calls) {
    const last = c.attempts.at(-1);
    const lastText = last === undefined ? '-' : `${last.status_code ?? 'lost'}${last.error_message ? ' ' + oneLine(last.error_message).slice(0, 60) : ''}`;
    const callbackText = callbackCell(c.callback);
    lines.push(`${c.async_id.padEnd(32)}${c.state.padEnd(11)}${String(c.attempts.length).padEnd(10)}${c.accepted_at.padEnd(26)}${callbackText.padEnd(18)}${lastText}${c.dead_reason ? ` (${c.dead_reason})` : ''}`);
    // A callback that failed says why on a line of its own (the owner's view has the error text, never the URL's query).
    if (c.callback?.state === 'failed' && c.callback.last_error) lines.push(`  callback to ${printable(c.callback.url)}: ${oneLine(c.callback.last_error).slice(0, 160)}`);
  }
  return lines;
}

/** `-` without a callback, else its state and the POSTs tried: `delivered`, `pending 1/3`, `failed 3/3`. */
export function callbackCell(cb: ApiAsyncCall['callback']): string {
  if (cb === null || cb === undefined) return '-';
  return cb.state === 'delivered' ? 'delivered' : `${cb.state} ${cb.attempts}/${CALLBACK_MAX_ATTEMPTS}`;
}

export async function listAsync(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const limit = intOption(ctx, 'limit', 1000) ?? DEFAULT_LIST;
  const client = await ctx.client();
  const page = await client.asyncCalls(ref, parseStateFlag(stringOption(ctx, 'state')), limit);
  if (ctx.output === 'json') printJson(ctx, page);
  else printLines(ctx, asyncLines(page.calls));
  return 0;
}

export async function retryAsync(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const ids = ctx.args.slice(1);
  const all = ctx.options.all === true;
  if (all === (ids.length > 0)) throw new UsageError('name the dead calls to requeue, or --all (not both)', { hint: 'fnhost function:async:retry hello async_... or fnhost function:async:retry hello --all' });
  for (const id of ids) if (!ASYNC_ID.test(id)) throw new UsageError(`"${id.slice(0, 60)}" is not an async id (async_ and 22 characters)`);
  const client = await ctx.client();
  const result = await client.retryAsync(ref, all ? 'all' : ids);
  if (ctx.output === 'json') printJson(ctx, result);
  else printLines(ctx, [`Requeued ${result.requeued} dead call${result.requeued === 1 ? '' : 's'}.`]);
  return 0;
}

/** "Name: value" as given to --header. */
export function parseHeaders(raw: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of raw) {
    const at = h.indexOf(':');
    const name = at < 1 ? '' : h.slice(0, at).trim();
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new UsageError(`--header "${h.slice(0, 60)}" must be "Name: value"`);
    out[name.toLowerCase()] = h.slice(at + 1).trim();
  }
  return out;
}

function bodyText(body: string, paint: ReturnType<typeof createPainter>): string {
  if (body === '') return paint.dim('(empty body)');
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return printable(body);
  }
}

export async function invoke(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const method = (stringOption(ctx, 'method') ?? 'POST').toUpperCase();
  if (!METHOD.test(method)) throw new UsageError(`--method "${method}" is not an HTTP method such as GET or POST`);
  const path = stringOption(ctx, 'path') ?? '/';
  if (!path.startsWith('/')) throw new UsageError(`--path "${path}" must start with "/"`);
  const data = stringOption(ctx, 'data');
  if (data !== undefined && Buffer.byteLength(data) > MAX_INVOKE_BODY_BYTES) throw new UsageError(`--data is larger than ${MAX_INVOKE_BODY_BYTES} bytes`);
  const headers = parseHeaders(listOption(ctx, 'header'));
  if (data !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
  const isAsync = ctx.options.async === true;
  const wait = ctx.options.wait === true;
  if (wait && !isAsync) throw new UsageError('--wait goes with --async');
  const client = await ctx.client((MAX_TIMEOUT_SECONDS + 30) * 1000);
  const fn = await client.getFunction(ref);
  const paint = createPainter(ctx.color);
  const target = `/${isAsync ? 'async-invoke' : 'invoke'}/${encodeURIComponent(fn.function_id)}${path === '/' ? '' : path}`;
  const answer = await client.callPublic(target, method, headers, data);
  if (!isAsync) {
    if (ctx.output === 'json') printJson(ctx, { status_code: answer.status, body: answer.body });
    else printLines(ctx, [`Status: ${answer.status}`, '', bodyText(answer.body, paint)]);
    return answer.status >= 500 ? 1 : 0;
  }
  if (answer.status !== 202) {
    if (ctx.output === 'json') printJson(ctx, { status_code: answer.status, body: answer.body });
    else printLines(ctx, [`Not accepted: ${answer.status}`, '', bodyText(answer.body, paint)]);
    return 1;
  }
  const accepted = JSON.parse(answer.body) as { async_id: string };
  if (!wait) {
    if (ctx.output === 'json') printJson(ctx, accepted);
    else printLines(ctx, [`Accepted: ${accepted.async_id}`, `State:    fnhost function:async ${ref}`]);
    return 0;
  }
  // --wait: the owner's view of the call until it is done (retries may take minutes: Lambda's backoff).
  for (let delay = 200; ; delay = Math.min(delay * 2, 5000)) {
    const call = await client.asyncCall(ref, accepted.async_id);
    if (call.state === 'succeeded' || call.state === 'failed' || call.state === 'dead') {
      if (ctx.output === 'json') printJson(ctx, call);
      else {
        const result = call.result;
        printLines(ctx, [
          `Async:    ${call.async_id}`,
          `State:    ${call.state}${call.dead_reason ? ` (${call.dead_reason})` : ''}`,
          `Attempts: ${call.attempts.map((a) => `${a.attempt}: ${a.status_code ?? 'lost'}`).join(', ')}`,
          ...(result === null ? [] : [`Status:   ${result.status_code}`, '', bodyText(Buffer.from(result.body, 'base64').toString('utf8'), paint)]),
        ]);
      }
      return call.state === 'succeeded' ? 0 : 1;
    }
    await new Promise((r) => setTimeout(r, delay));
  }
}
