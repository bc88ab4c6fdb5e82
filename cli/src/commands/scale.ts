import { UsageError } from '../errors.ts';
import { createPainter } from '../format/color.ts';
import { scalingText } from '../format/function.ts';
import { DEFAULT_MAX_REPLICAS, DEFAULT_MIN_REPLICAS, DEFAULT_TARGET_CONCURRENCY, MAX_IDLE_SECONDS, MAX_REPLICAS, MAX_TARGET_CONCURRENCY, MIN_IDLE_SECONDS, parseScalingChange } from '@fnhost/core/scaling.ts';
import type { ScalingChange } from '@fnhost/core/scaling.ts';
import type { ApiFunction } from '../api/types.ts';
import { asUsage, functionRef, printJson, printLines, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

// function:scale: pods, autoscaling on concurrency, idle scale to zero and CPU
// of a function on Kubernetes (PUT /api/v1/functions/{ref}/scaling); on one
// machine the CPU only (--cpu-request, --cpu-limit: the runtime's cpu cgroup). Flags not
// given leave their setting as it is; --min/--max/--target adjust the current
// autoscaling (or start it with the defaults for what is not given).

function wholeNumber(ctx: CommandContext, name: string, min: number, max: number): number | undefined {
  const raw = stringOption(ctx, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** The API body for the flags; `current` fills the autoscale fields not given. */
export function scalingBody(ctx: CommandContext, current: ApiFunction['scaling']): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const replicas = wholeNumber(ctx, 'replicas', 0, MAX_REPLICAS);
  if (replicas !== undefined) body.replicas = replicas;
  const min = wholeNumber(ctx, 'min', 0, MAX_REPLICAS);
  const max = wholeNumber(ctx, 'max', 1, MAX_REPLICAS);
  const target = wholeNumber(ctx, 'target', 1, MAX_TARGET_CONCURRENCY);
  const autoscale = stringOption(ctx, 'autoscale');
  if (autoscale !== undefined && autoscale !== 'off' && autoscale !== 'on') throw new UsageError(`--autoscale must be on or off, got ${JSON.stringify(autoscale)}`);
  if (autoscale === 'off' && (min ?? max ?? target) !== undefined) throw new UsageError('--autoscale off turns autoscaling off and takes no --min, --max or --target');
  if (autoscale === 'off') body.autoscale = null;
  else if (autoscale === 'on' || min !== undefined || max !== undefined || target !== undefined) {
    const base = current?.autoscale ?? { min_replicas: DEFAULT_MIN_REPLICAS, max_replicas: DEFAULT_MAX_REPLICAS, target_concurrency: DEFAULT_TARGET_CONCURRENCY };
    body.autoscale = { min_replicas: min ?? base.min_replicas, max_replicas: max ?? Math.max(base.max_replicas, min ?? 0), target_concurrency: target ?? base.target_concurrency };
  }
  const toZero = stringOption(ctx, 'scale-to-zero');
  if (toZero === 'off') body.scale_to_zero = null;
  else if (toZero === 'on') body.scale_to_zero = {};
  else if (toZero !== undefined) {
    if (!/^\d+$/.test(toZero) || Number(toZero) < MIN_IDLE_SECONDS || Number(toZero) > MAX_IDLE_SECONDS) {
      throw new UsageError(`--scale-to-zero takes on, off or the idle seconds (${MIN_IDLE_SECONDS}-${MAX_IDLE_SECONDS}), got ${JSON.stringify(toZero)}`);
    }
    body.scale_to_zero = { idle_seconds: Number(toZero) };
  }
  const request = stringOption(ctx, 'cpu-request');
  const limit = stringOption(ctx, 'cpu-limit');
  if (request !== undefined || limit !== undefined) {
    const pick = (flag: string | undefined, now: string | null | undefined) => (flag === undefined ? (now ?? null) : flag === 'default' ? null : flag);
    body.cpu = { request: pick(request, current?.cpu.request), limit: pick(limit, current?.cpu.limit) };
  }
  if (Object.keys(body).length === 0) {
    throw new UsageError('function:scale needs at least one of --replicas, --min, --max, --target, --autoscale, --scale-to-zero, --cpu-request, --cpu-limit');
  }
  // The same checks as the server's, before sending (messages speak of the API's fields).
  asUsage((): ScalingChange => parseScalingChange(body));
  // The server refuses it too (409): autoscaling sets the pod count, a fixed one would be ignored.
  const autoscaled = body.autoscale === undefined ? (current?.autoscale ?? null) : body.autoscale;
  if (body.replicas !== undefined && autoscaled !== null) {
    throw new UsageError(`--replicas ${String(body.replicas)} would be ignored: ${ctx.args[0] ?? 'the function'} autoscales (spec.scaling), which sets its pod count`, {
      hint: `leave autoscaling with --autoscale off --replicas ${String(body.replicas)}, or bound it with --min and --max`,
    });
  }
  return body;
}

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const client = await ctx.client();
  const current = await client.getFunction(ref);
  if (current.scaling === undefined) {
    // One machine: one runtime per function; only its CPU (the sandbox's cpu cgroup) can be set.
    const body = scalingBody(ctx, { replicas: 1, autoscale: null, scale_to_zero: null, cpu: current.cpu ?? { request: null, limit: null } });
    const other = Object.keys(body).filter((k) => k !== 'cpu');
    if (other.length > 0) throw new UsageError('this server runs one runtime per function on one machine: function:scale takes only --cpu-request and --cpu-limit here (pods and autoscaling are for Kubernetes)');
    const fn = await client.setScaling(ref, body);
    if (ctx.output === 'json') printJson(ctx, fn);
    else printLines(ctx, [`${createPainter(ctx.color).green('✓')} CPU of ${fn.name}: ${fn.cpu === undefined ? 'default (an equal share, no limit)' : `${fn.cpu.request ?? 'default'}/${fn.cpu.limit ?? 'none'} (request/limit)`}`]);
    return 0;
  }
  const fn = await client.setScaling(ref, scalingBody(ctx, current.scaling));
  if (ctx.output === 'json') printJson(ctx, fn);
  else printLines(ctx, [`${createPainter(ctx.color).green('✓')} Scaling of ${fn.name}: ${scalingText(fn.scaling!)}`]);
  return 0;
}
