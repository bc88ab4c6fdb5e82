import { expect } from 'chai';
import { request as httpRequest } from 'node:http';
import { startHarness, waitFor, type Harness } from '../../gateway/harness.ts';
import type { Case, CaseRequest } from './case.ts';
import { REQ_CASES } from './req-cases.ts';
import { RES_CASES } from './res-cases.ts';

// Express 5's own tests for req and res (expressjs/express at a3714473, test/req.*.js and
// test/res.*.js), ported one for one into a handler invoked through a real gateway (/invoke, real
// HTTP, a real runtime process): the case's middleware is the handler's code, its supertest request
// is sent to /invoke, and its expectations are checked on the answer. A case marked `differs` is a
// deliberate difference listed in docs/runtime.md, asserted as fnhost's documented behaviour.
//
// Every case lives in one function (one runtime): the handler picks the case by a request header,
// so the whole suite costs one gateway and one runtime start.

const CASES: Case[] = [...REQ_CASES, ...RES_CASES];
const CASE_HEADER = 'x-conformance-case';

function functionCode(cases: Case[]): string {
  const entries = cases.map((c, i) => `  ${i}: function (req, res) {\n    ${c.run};\n  },`).join('\n');
  return `const cases = {\n${entries}\n};\nexport default (req, res) => cases[req.headers['${CASE_HEADER}']](req, res);\n`;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(url: string, index: number, r: CaseRequest = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url + (r.path ?? '/'), { method: r.method ?? 'GET', headers: { [CASE_HEADER]: String(index), ...r.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(r.body);
  });
}

function matches(actual: string | undefined, wanted: string | RegExp): boolean {
  return typeof wanted === 'string' ? actual === wanted : actual !== undefined && wanted.test(actual);
}

describe('Express 5 conformance: test/req.*.js and test/res.*.js through /invoke (expressjs/express a3714473)', function () {
  this.timeout(180_000);
  let h: Harness;
  const answers: Answer[] = [];
  const records: Array<{ status_code: number; error_message: string | null }> = [];

  before(async () => {
    h = await startHarness();
    const fn = await h.createFunction('express-conformance', functionCode(CASES));
    const url = `${h.url}/invoke/${fn.function_id}`;
    // One call per case, in order: the execution records then line up with the cases.
    for (const [i, c] of CASES.entries()) answers.push(await send(url, i, c.req));
    const logs = await waitFor(async () => {
      const page = await h.logs('express-conformance', `?limit=${CASES.length}`);
      return page.logs.length === CASES.length ? (page.logs as typeof records) : undefined;
    }, 'a record of every case');
    records.push(...logs!.reverse());
  });
  after(async () => {
    await h?.close();
  });

  for (const [i, c] of CASES.entries()) {
    it(c.differs ? `${c.it} [fnhost: ${c.differs}]` : c.it, () => {
      const got = answers[i]!;
      const what = `${c.it}: ${got.status} ${JSON.stringify(got.headers)} ${JSON.stringify(got.body)}`;
      const want = c.expect;
      if (want.error) {
        expect(got.status, what).to.equal(500);
        expect(JSON.parse(got.body).error, what).to.equal('function_error');
        expect(records[i]!.error_message, what).to.match(want.error);
        return;
      }
      if (want.status !== undefined) expect(got.status, what).to.equal(want.status);
      else expect(got.status, what).to.be.within(200, 299);
      if (want.body !== undefined) expect(matches(got.body, want.body), `${what}: body should be ${want.body}`).to.equal(true);
      if (want.json !== undefined) expect(JSON.parse(got.body), what).to.deep.equal(want.json);
      for (const [name, value] of Object.entries(want.headers ?? {})) {
        const actual = got.headers[name];
        if (value === null) expect(actual, `${what}: ${name} should be absent`).to.equal(undefined);
        else expect(matches(Array.isArray(actual) ? actual.join(', ') : actual, value), `${what}: ${name} should be ${value}`).to.equal(true);
      }
      if (want.setCookie) {
        const lines = (got.headers['set-cookie'] ?? []) as string[];
        expect(lines.length, what).to.equal(want.setCookie.length);
        want.setCookie.forEach((line, n) => expect(matches(lines[n], line), `${what}: Set-Cookie ${n} should be ${line}`).to.equal(true));
      }
      expect(records[i]!.status_code, what).to.equal(got.status);
    });
  }
});
