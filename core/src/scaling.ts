import { ConflictError, ValidationError } from './errors.ts';

// Limits and units of a function's scaling and CPU on Kubernetes (spec.scaling,
// spec.cpu), shared by the CRD schema (operator/src/crd.ts), the operator's
// checks, the management API and the CLI, so they all agree.

export const MAX_REPLICAS = 100;
export const DEFAULT_MIN_REPLICAS = 1;
export const DEFAULT_MAX_REPLICAS = 10;
export const DEFAULT_TARGET_CONCURRENCY = 10;
export const MAX_TARGET_CONCURRENCY = 1000;
/** Idle seconds used when spec.scaling.minReplicas is 0 and spec.scaleToZero does not say. */
export const DEFAULT_IDLE_SECONDS = 300;
export const MIN_IDLE_SECONDS = 30;
export const MAX_IDLE_SECONDS = 86_400;

/** A CPU quantity as fnhost accepts it: millicores ("250m") or cores with up to three decimals ("0.5", "2"). */
export const CPU_QUANTITY_PATTERN = '^([1-9][0-9]{0,5}m|[0-9]{1,3}(\\.[0-9]{1,3})?)$';
const CPU_QUANTITY = new RegExp(CPU_QUANTITY_PATTERN);

export function isCpuQuantity(value: string): boolean {
  return CPU_QUANTITY.test(value) && millicores(value) > 0;
}

/** Millicores of a CPU quantity ("250m" → 250, "0.5" → 500); NaN when it is not one. */
export function millicores(quantity: string): number {
  if (!CPU_QUANTITY.test(quantity) && !/^\d+(\.\d+)?m?$/.test(quantity)) return Number.NaN;
  return quantity.endsWith('m') ? Number(quantity.slice(0, -1)) : Math.round(Number(quantity) * 1000);
}

/**
 * How a function scales on Kubernetes, as the management API shows and takes
 * it (`scaling` of a function in cluster mode; PUT /functions/{ref}/scaling).
 * One machine runs one runtime per function and has none of this.
 */
export interface FunctionScalingSettings {
  /** Fixed pod count while active (spec.replicas), used when autoscale is null. */
  replicas: number;
  /** Autoscaling on concurrency (spec.scaling); null: a fixed replica count. */
  autoscale: { min_replicas: number; max_replicas: number; target_concurrency: number } | null;
  /** Idle scale to zero (spec.scaleToZero); null: off (autoscale.min_replicas 0 turns it on with DEFAULT_IDLE_SECONDS). */
  scale_to_zero: { idle_seconds: number } | null;
  /** CPU of the runtime container (spec.cpu); null fields: the operator's defaults. */
  cpu: { request: string | null; limit: string | null };
}

/** A change of scaling settings: only the fields given change. */
export type ScalingChange = Partial<FunctionScalingSettings>;

function wholeNumber(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${field} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function object(value: unknown, field: string, allowed: string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ValidationError(`${field} must be an object or null`);
  const extra = Object.keys(value).find((k) => !allowed.includes(k));
  if (extra !== undefined) throw new ValidationError(`${field}: unknown field "${extra}"; allowed: ${allowed.join(', ')}`);
  return value as Record<string, unknown>;
}

function cpuField(value: unknown, field: string): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string' || !isCpuQuantity(value)) throw new ValidationError(`${field} must be a CPU quantity such as 250m or 0.5, got ${JSON.stringify(value)}`);
  return value;
}

/** Parses and checks a scaling change (the body of PUT /functions/{ref}/scaling). */
export function parseScalingChange(raw: unknown): ScalingChange {
  const body = object(raw, 'scaling', ['replicas', 'autoscale', 'scale_to_zero', 'cpu']);
  const change: ScalingChange = {};
  if (body.replicas !== undefined) change.replicas = wholeNumber(body.replicas, 'replicas', 0, MAX_REPLICAS);
  if (body.autoscale === null) change.autoscale = null;
  else if (body.autoscale !== undefined) {
    const a = object(body.autoscale, 'autoscale', ['min_replicas', 'max_replicas', 'target_concurrency']);
    const min = a.min_replicas === undefined ? DEFAULT_MIN_REPLICAS : wholeNumber(a.min_replicas, 'autoscale.min_replicas', 0, MAX_REPLICAS);
    const max = a.max_replicas === undefined ? Math.max(DEFAULT_MAX_REPLICAS, min) : wholeNumber(a.max_replicas, 'autoscale.max_replicas', 1, MAX_REPLICAS);
    if (min > max) throw new ValidationError(`autoscale.min_replicas (${min}) is above autoscale.max_replicas (${max})`);
    const target = a.target_concurrency === undefined ? DEFAULT_TARGET_CONCURRENCY : wholeNumber(a.target_concurrency, 'autoscale.target_concurrency', 1, MAX_TARGET_CONCURRENCY);
    change.autoscale = { min_replicas: min, max_replicas: max, target_concurrency: target };
  }
  if (body.scale_to_zero === null) change.scale_to_zero = null;
  else if (body.scale_to_zero !== undefined) {
    const z = object(body.scale_to_zero, 'scale_to_zero', ['idle_seconds']);
    change.scale_to_zero = { idle_seconds: z.idle_seconds === undefined ? DEFAULT_IDLE_SECONDS : wholeNumber(z.idle_seconds, 'scale_to_zero.idle_seconds', MIN_IDLE_SECONDS, MAX_IDLE_SECONDS) };
  }
  if (body.cpu === null) change.cpu = { request: null, limit: null };
  else if (body.cpu !== undefined) {
    const c = object(body.cpu, 'cpu', ['request', 'limit']);
    change.cpu = { request: cpuField(c.request, 'cpu.request'), limit: cpuField(c.limit, 'cpu.limit') };
    if (change.cpu.request !== null && change.cpu.limit !== null && millicores(change.cpu.request) > millicores(change.cpu.limit)) {
      throw new ValidationError(`cpu.request (${change.cpu.request}) is above cpu.limit (${change.cpu.limit})`);
    }
  }
  return change;
}

/** A fixed replica count asked of a function whose pods autoscaling (spec.scaling) counts. */
export class AutoscaledReplicasError extends ConflictError {
  constructor(replicas: number, autoscale: NonNullable<FunctionScalingSettings['autoscale']>) {
    super(
      `replicas ${replicas} would be ignored: the function autoscales (spec.scaling, ${autoscale.min_replicas}-${autoscale.max_replicas} pods), which sets its pod count; ` +
        'turn autoscaling off in the same change (autoscale: null; CLI: --autoscale off --replicas N) or set its bounds (min_replicas, max_replicas; CLI: --min, --max)',
    );
  }
}

/** The settings after a change, checked as a whole (scale to zero needs an autoscale floor of 0). */
export function applyScalingChange(current: FunctionScalingSettings, change: ScalingChange): FunctionScalingSettings {
  const next: FunctionScalingSettings = { ...current, ...change, cpu: change.cpu ?? current.cpu };
  // The operator sizes an autoscaled function from spec.scaling and ignores spec.replicas: taking a
  // replica count then would report a change that never happens (issue 28). Refused, as Kubernetes
  // refuses a field another owner manages, naming the way out.
  if (change.replicas !== undefined && next.autoscale !== null) throw new AutoscaledReplicasError(change.replicas, next.autoscale);
  if (next.scale_to_zero !== null && next.autoscale !== null && next.autoscale.min_replicas > 0) {
    if (change.scale_to_zero !== undefined && change.autoscale === undefined) next.autoscale = { ...next.autoscale, min_replicas: 0 };
    else throw new ValidationError(`scale to zero needs autoscale.min_replicas 0 (it is ${next.autoscale.min_replicas})`);
  }
  return next;
}
