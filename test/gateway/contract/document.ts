import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { load as loadYaml } from 'js-yaml';

// gateway/openapi.yaml as data for the contract fuzzer: its operations with
// their parameters, bodies and responses, local $refs resolved (YAML anchors
// are resolved by the parser).

export type Schema = Record<string, any>;

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: Schema;
}

export interface Response {
  description?: string;
  content?: Record<string, { schema?: Schema }>;
}

export interface Operation {
  method: string;
  path: string;
  tags: string[];
  parameters: Parameter[];
  body?: { required: boolean; schema?: Schema };
  responses: Record<string, Response>;
  /** The operation names no credential (security: []). */
  anonymous: boolean;
}

export interface PathItem {
  path: string;
  operations: Operation[];
  /** The path takes every method (x-every-method). */
  everyMethod: boolean;
}

export interface ContractDocument {
  raw: Record<string, any>;
  paths: PathItem[];
  /** What a documented path answers to a method it does not list (x-unlisted-methods). */
  unlistedMethods: Record<string, Response>;
}

export const DOCUMENT_FILE = fileURLToPath(new URL('../../../gateway/openapi.yaml', import.meta.url));
const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options', 'trace'];

/** Resolves every local `$ref` (the document's refs form no cycle). */
export function resolveRefs(node: unknown, root: Record<string, any>): any {
  if (Array.isArray(node)) return node.map((n) => resolveRefs(n, root));
  if (node === null || typeof node !== 'object') return node;
  const ref = (node as { $ref?: unknown }).$ref;
  if (typeof ref === 'string') {
    if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported, got ${ref}`);
    const target = ref.slice(2).split('/').reduce<any>((at, key) => at?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], root);
    if (target === undefined) throw new Error(`$ref ${ref} points at nothing`);
    return resolveRefs(target, root);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, resolveRefs(v, root)]));
}

export async function loadContract(file = DOCUMENT_FILE): Promise<ContractDocument> {
  const raw = loadYaml(await readFile(file, 'utf8')) as Record<string, any>;
  const doc = resolveRefs(raw, raw) as Record<string, any>;
  const paths: PathItem[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    const shared: Parameter[] = item.parameters ?? [];
    const operations: Operation[] = [];
    for (const method of METHODS) {
      const op = item[method];
      if (op === undefined) continue;
      const own: Parameter[] = op.parameters ?? [];
      const parameters = [...shared.filter((p) => !own.some((o) => o.name === p.name && o.in === p.in)), ...own];
      const json = op.requestBody?.content?.['application/json'];
      operations.push({
        method: method.toUpperCase(),
        path,
        tags: op.tags ?? [],
        parameters,
        body: op.requestBody === undefined ? undefined : { required: op.requestBody.required === true, schema: json?.schema },
        responses: op.responses,
        anonymous: Array.isArray(op.security) && op.security.length === 0,
      });
    }
    paths.push({ path, operations, everyMethod: item['x-every-method'] === true });
  }
  const unlisted = doc['x-unlisted-methods']?.responses;
  if (unlisted === undefined) throw new Error('the document has no x-unlisted-methods.responses');
  return { raw, paths, unlistedMethods: unlisted };
}

/** The documented answer for a status: the exact code, then 4XX/5XX, then default. */
export function responseFor(responses: Record<string, Response>, status: number): Response | undefined {
  return responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
}
