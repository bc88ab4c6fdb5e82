import fc from 'fast-check';
import type { Schema } from './document.ts';

// fast-check arbitraries from the document's JSON Schemas: values the schema
// accepts (`valid`), and values beside them (`nearby`: the wrong type, out of
// range, too long, any JSON), so that both the 2xx and the 400 answers of
// each operation are met. Only the keywords gateway/openapi.yaml uses are
// known here; an unknown one fails loudly rather than being ignored.

const KNOWN = new Set(['type', 'enum', 'format', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum', 'properties', 'required', 'additionalProperties', 'items', 'maxItems', 'maxProperties', 'propertyNames', 'oneOf', 'default', 'example', 'description']);

/** Where a test supplies values of its own (an existing function's name, working code) by property or parameter name. */
export type Overrides = Record<string, fc.Arbitrary<unknown>>;

/** Long strings are cut so a run stays quick; maxLength + 1 is still made by `nearby`. */
const LONGEST = 80;

export function valid(schema: Schema | undefined, overrides: Overrides = {}, name?: string): fc.Arbitrary<unknown> {
  if (name !== undefined && overrides[name] !== undefined) return overrides[name]!;
  if (schema === undefined) return fc.jsonValue({ maxDepth: 2 });
  for (const key of Object.keys(schema)) if (!KNOWN.has(key)) throw new Error(`the contract fuzzer does not know the schema keyword ${key}`);
  if (schema.enum !== undefined) return fc.constantFrom(...(schema.enum as unknown[]));
  if (schema.oneOf !== undefined) return fc.oneof(...(schema.oneOf as Schema[]).map((s) => valid(s, overrides)));
  // A bare pattern (propertyNames) describes a string.
  const type = schema.type ?? (schema.pattern !== undefined ? 'string' : undefined);
  if (Array.isArray(type)) return fc.oneof(...type.map((t: string) => valid({ ...schema, type: t }, overrides)));
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
    case 'string':
      return stringOf(schema);
    case 'array':
      return fc.array(valid(schema.items, overrides), { maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required: string[] = schema.required ?? [];
      const full = fc.record(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, valid(s, overrides, k)])), { requiredKeys: required });
      // With every optional key a chance to be out of the server's own bounds, the bare minimum is drawn too.
      const bare = fc.record(Object.fromEntries(required.map((k) => [k, valid(props[k], overrides, k)])));
      const record = required.length === 0 ? full : fc.oneof(full, bare);
      if (schema.additionalProperties === undefined || schema.additionalProperties === false) return record;
      const keys = schema.propertyNames === undefined ? fc.string({ minLength: 1, maxLength: 12 }) : (valid(schema.propertyNames) as fc.Arbitrary<string>);
      const extra = fc.dictionary(keys, valid(schema.additionalProperties, overrides), { maxKeys: Math.min(schema.maxProperties ?? 3, 3) });
      return Object.keys(props).length === 0 ? extra : fc.tuple(extra, record).map(([e, r]) => ({ ...e, ...r }));
    }
    case undefined:
      return fc.jsonValue({ maxDepth: 2 });
    default:
      throw new Error(`the contract fuzzer does not know the type ${String(type)}`);
  }
}

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const max = Math.min(schema.maxLength ?? LONGEST, LONGEST);
  const min = schema.minLength ?? 0;
  if (schema.format === 'uuid') return fc.uuid();
  if (schema.format === 'date-time') return fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(4_000_000_000_000) }).map((d) => d.toISOString());
  if (schema.pattern !== undefined) return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= min && s.length <= (schema.maxLength ?? Infinity)).map((s) => s.slice(0, schema.maxLength ?? s.length));
  return fc.string({ minLength: min, maxLength: max, unit: 'grapheme' });
}

/** Values beside the schema: the wrong type, one past each bound, any JSON. */
export function nearby(schema: Schema | undefined): fc.Arbitrary<unknown> {
  const out: fc.Arbitrary<unknown>[] = [fc.jsonValue({ maxDepth: 2 }), fc.string({ maxLength: 20 })];
  if (schema?.maxLength !== undefined) out.push(fc.constant('a'.repeat(schema.maxLength + 1)));
  if (schema?.minimum !== undefined) out.push(fc.constant(schema.minimum - 1));
  if (schema?.maximum !== undefined) out.push(fc.constant(schema.maximum + 1));
  if (schema?.pattern !== undefined) out.push(fc.constantFrom('UPPER', '-dash', 'a_b', 'a.b'));
  if (schema?.type === 'integer') out.push(fc.constantFrom(1.5, '12abc', ''));
  return fc.oneof(...out);
}

/** Mostly valid, sometimes not. */
export function mostlyValid(schema: Schema | undefined, overrides: Overrides = {}, name?: string): fc.Arbitrary<unknown> {
  return fc.oneof({ arbitrary: valid(schema, overrides, name), weight: 3 }, { arbitrary: nearby(schema), weight: 1 });
}
