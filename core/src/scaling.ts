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
