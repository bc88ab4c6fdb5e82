import { expect } from 'chai';
import fc from 'fast-check';
import { request } from 'node:http';
import { contractProblem, type Answer } from './contract/check.ts';
import { loadContract, type ContractDocument, type Operation, type PathItem } from './contract/document.ts';
import { mostlyValid, valid, type Overrides } from './contract/arbitrary.ts';
import { startHarness, TOKEN, type Harness } from './harness.ts';

// A property-based fuzzer driven by gateway/openapi.yaml, against a real
// gateway (real HTTP, SQLite, runtime processes). For every operation it
// sends requests made from the document's own schemas (mostly valid values,
// some beside them, with and without credentials), and for every documented
// path the methods it does not list; each answer's status must be one the
// document lists for it, and each JSON body must match that answer's
// schema. fast-check makes the requests (fixed seed, a bounded number of runs
// per operation, so a run is repeatable and takes a minute or two);
// FNHOST_FUZZ_SEED and FNHOST_FUZZ_RUNS explore further, FNHOST_FUZZ_TRACE=1
// prints every request and answer.

const SEED = Number(process.env.FNHOST_FUZZ_SEED ?? 20);
const RUNS = Number(process.env.FNHOST_FUZZ_RUNS ?? 20);
const FIXTURE = 'fuzz-fixture';
const GOOD_CODE = 'export default (req, res) => res.json({ method: req.method, path: req.path })';
const STANDARD = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** Methods Node's parser knows that no route of the gateway takes. */
const UNUSUAL = ['TRACE', 'PROPFIND'];

type Credential = 'admin' | 'runtime' | 'none' | 'wrong';

interface Sent {
  method: string;
  path: string;
  credential: Credential;
  body?: string;
}

function send(base: string, sent: Sent, runtimeToken: string): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (sent.credential === 'admin') headers.authorization = `Bearer ${TOKEN}`;
  if (sent.credential === 'runtime') headers.authorization = `Bearer ${runtimeToken}`;
  if (sent.credential === 'wrong') headers.authorization = 'Bearer not-a-token';
  if (sent.body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(sent.body));
  }
  return new Promise((resolve, reject) => {
    const req = request(base + sent.path, { method: sent.method, headers, timeout: 60_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${sent.method} ${sent.path}: no answer in 60 s`)));
    req.on('error', reject);
    req.end(sent.body);
  });
}

/** The request's path with its path parameters filled in and its query string. */
function target(op: Operation, values: Record<string, unknown>): string {
  let path = op.path;
  const query = new URLSearchParams();
  for (const p of op.parameters) {
    const v = values[p.name];
    if (v === undefined) continue;
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(text === '' ? 'x' : text));
    else if (p.in === 'query') query.append(p.name, text);
  }
  const q = query.toString();
  return q === '' ? path : `${path}?${q}`;
}

describe('gateway OpenAPI contract, fuzzed from the document', function () {
  // A bounded run: about 40 operations and 20 paths, RUNS requests each.
  this.timeout(300_000);
  let h: Harness;
  let contract: ContractDocument;
  let fixtureId = '';
  let runtimeToken = '';

  /** The fixture function exists (a fuzzed DELETE may have removed it). */
  const ensureFixture = async () => {
    const got = await h.api('GET', `/api/v1/functions/${FIXTURE}`);
    if (got.status === 200) {
      fixtureId = got.body.function_id;
    } else {
      fixtureId = (await h.createFunction(FIXTURE, GOOD_CODE)).function_id;
    }
    runtimeToken = h.platform.runtimeToken(fixtureId);
  };

  const overrides = (): Overrides => ({
    ref: fc.oneof(fc.constant(FIXTURE), fc.constant(fixtureId), valid({ type: 'string', maxLength: 80 })),
    functionId: fc.oneof({ arbitrary: fc.constant(fixtureId), weight: 2 }, { arbitrary: fc.uuid(), weight: 1 }, { arbitrary: fc.string({ minLength: 1, maxLength: 40 }), weight: 1 }),
    code: fc.oneof(fc.constant(GOOD_CODE), fc.string({ maxLength: 60 })),
    token: fc.oneof(fc.constant(TOKEN), fc.string({ maxLength: 40 })),
  });

  const credentials = (op: Pick<Operation, 'tags' | 'anonymous'>): fc.Arbitrary<Credential> => {
    const main: Credential = op.tags.includes('internal') ? 'runtime' : op.anonymous ? 'none' : 'admin';
    return fc.oneof({ arbitrary: fc.constant(main), weight: 6 }, { arbitrary: fc.constantFrom<Credential>('admin', 'runtime', 'none', 'wrong'), weight: 2 });
  };

  const paramValues = (op: Operation, o: Overrides) =>
    fc.record(
      Object.fromEntries(op.parameters.map((p) => {
        const arb = p.in === 'path' ? valid(p.schema, o, p.name) : mostlyValid(p.schema, o, p.name);
        return [p.name, p.required || p.in === 'path' ? arb : fc.option(arb, { nil: undefined })];
      })),
    );

  const baseFor = (tags: string[]) => (tags.includes('admin') ? h.platform.adminUrl : h.url);

  before(async () => {
    contract = await loadContract();
    h = await startHarness();
    await ensureFixture();
  });
  after(async () => {
    await h?.close();
  });

  const failures: string[] = [];

  it('answers every documented operation only with documented statuses and bodies', async () => {
    const operations = contract.paths.flatMap((p) => p.operations);
    expect(operations.length).to.be.greaterThan(30);
    const statuses = new Set<number>();
    for (const op of operations) {
      await ensureFixture();
      const o = overrides();
      const body = op.body === undefined
        ? fc.constant(undefined)
        : fc.oneof(
            { arbitrary: valid(op.body.schema, o).map((v) => JSON.stringify(v)), weight: 4 },
            { arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)), weight: 1 },
            { arbitrary: fc.constantFrom('{', 'not json', ''), weight: 1 },
          );
      const result = await fc.check(
        fc.asyncProperty(paramValues(op, o), credentials(op), body, async (values, credential, text) => {
          const sent: Sent = { method: op.method, path: target(op, values), credential, body: text };
          const answer = await send(baseFor(op.tags), sent, runtimeToken);
          statuses.add(answer.status);
          if (process.env.FNHOST_FUZZ_TRACE) console.log(answer.status, sent.method, sent.path.slice(0, 80), credential, (text ?? "").slice(0, 100), answer.body.slice(0, 120));
          // A function the fuzzer made goes again, so runtimes do not pile up.
          if (op.method === 'POST' && op.path === '/api/v1/functions' && answer.status === 201) await h.api('DELETE', `/api/v1/functions/${JSON.parse(answer.body).function_id}`);
          const problem = contractProblem(op.responses, answer, op.method);
          if (problem !== undefined) throw new Error(`${sent.method} ${sent.path} (${credential}${text === undefined ? '' : `, body ${text.slice(0, 120)}`}): ${problem}`);
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
      if (result.failed) failures.push(`${op.method} ${op.path}: ${(result.errorInstance as Error)?.message ?? String(result.errorInstance)}`);
    }
    // The requests reached past validation too, not only the 400s and 401s.
    for (const status of [200, 201, 204, 400, 401, 404]) expect([...statuses], `statuses met`).to.include(status);
  });

  it('answers methods a path does not list as x-unlisted-methods says: 405 with Allow naming the listed ones, 501 for a method no route takes', async () => {
    const listedOf = (item: PathItem) => {
      const listed = new Set(item.operations.map((op) => op.method));
      // Koa answers HEAD wherever GET is served (the document lists HEAD only where it differs).
      if (listed.has('GET')) listed.add('HEAD');
      return listed;
    };
    let checked = 0;
    for (const item of contract.paths) {
      if (item.everyMethod) continue;
      const listed = listedOf(item);
      const others = [...STANDARD, ...UNUSUAL].filter((m) => !listed.has(m));
      if (others.length === 0) continue;
      await ensureFixture();
      const o = overrides();
      const model = item.operations[0]!;
      const result = await fc.check(
        fc.asyncProperty(fc.constantFrom(...others), paramValues({ ...model, parameters: model.parameters.filter((p) => p.in === 'path') }, o), credentials(model), async (method, values, credential) => {
          const sent: Sent = { method, path: target(model, values), credential };
          const answer = await send(baseFor(model.tags), sent, runtimeToken);
          checked++;
          const problem = contractProblem(contract.unlistedMethods, answer, method);
          if (problem !== undefined) throw new Error(`${method} ${sent.path} (${credential}): ${problem}`);
          if (answer.status === 405 || (method === 'OPTIONS' && answer.status === 200)) {
            const allow = new Set(String(answer.headers.allow ?? '').split(/,\s*/).filter((m) => m !== ''));
            expect([...allow].sort(), `Allow of ${method} ${sent.path}`).to.deep.equal([...listed].sort());
          }
          if (STANDARD.includes(method) && answer.status === 501) throw new Error(`${method} ${sent.path}: 501 for a method the gateway implements`);
        }),
        { seed: SEED, numRuns: Math.max(others.length, Math.ceil(RUNS / 2)), endOnFailure: true },
      );
      if (result.failed) failures.push(`${item.path} (unlisted method): ${(result.errorInstance as Error)?.message ?? String(result.errorInstance)}`);
    }
    expect(checked).to.be.greaterThan(20);
  });

  it('found no answer outside the document', () => {
    expect(failures, failures.join('\n\n')).to.deep.equal([]);
  });
});
