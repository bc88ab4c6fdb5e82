import type { Context } from 'koa';
import { ValidationError } from '@fnhost/core';
import { PayloadTooLargeError } from '../invoke/errors.ts';
import { readBody } from '../invoke/bodies.ts';

/** Reads and parses a JSON request body of at most `max` bytes; an empty body is `undefined`. */
export async function readJson(ctx: Context, max: number): Promise<unknown> {
  const declared = ctx.get('content-length');
  if (declared !== '' && Number(declared) > max) throw new PayloadTooLargeError(max);
  const raw = await readBody(ctx.req, max);
  if (raw.length === 0) return undefined;
  const type = ctx.get('content-type');
  // The body is read as JSON whatever its label (curl -d says form-urlencoded); the error says so when it is not JSON.
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch (err) {
    const label = type !== '' && !/json/i.test(type) ? ` (sent as Content-Type "${type.slice(0, 100)}"; send application/json)` : '';
    throw new ValidationError(`request body is not valid JSON${label}: ${(err as Error).message}`, { cause: err });
  }
}
