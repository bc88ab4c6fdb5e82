import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { responseFor, type Response, type Schema } from './document.ts';

// One answer against the document: its status is one the operation lists
// (or covers with 4XX/5XX/default), and a JSON body matches the schema of
// that response. ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1) checks
// the bodies.

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats.default(ajv);
ajv.addKeyword('example');
const compiled = new WeakMap<Schema, ReturnType<typeof ajv.compile>>();

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Why the answer breaks the contract, or undefined. */
export function contractProblem(responses: Record<string, Response>, answer: Answer, method: string): string | undefined {
  const documented = responseFor(responses, answer.status);
  if (documented === undefined) return `status ${answer.status} is not documented (documented: ${Object.keys(responses).join(', ')}); body ${answer.body.slice(0, 300)}`;
  const schema = documented.content?.['application/json']?.schema;
  if (schema === undefined || method === 'HEAD') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return `status ${answer.status} is documented as JSON, but the body is not: ${answer.body.slice(0, 300)}`;
  }
  let validate = compiled.get(schema);
  if (validate === undefined) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (!validate(parsed)) return `the ${answer.status} body does not match its schema: ${ajv.errorsText(validate.errors)}; body ${answer.body.slice(0, 300)}`;
  return undefined;
}
