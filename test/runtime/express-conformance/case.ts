// One Express test case, ported: the handler code of the Express test (`app.use(function (req, res) { … })`),
// the request supertest sent, and what it expected. `differs` marks a deliberate difference from
// Express (docs/runtime.md, "Differences from Express"): `expect` then states fnhost's behaviour.

export interface CaseRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface CaseExpect {
  status?: number;
  /** The body exactly, or a pattern. */
  body?: string | RegExp;
  /** The body parsed as JSON, deep-equal. */
  json?: unknown;
  /** Lower-case header name → exact value, a pattern, or null for "absent". */
  headers?: Record<string, string | RegExp | null>;
  /** Every Set-Cookie line, in order. */
  setCookie?: Array<string | RegExp>;
  /** The handler threw: a 500 whose execution record's error_message matches (Express puts the message in its 500 body; fnhost never shows it to the caller). */
  error?: RegExp;
}

export interface Case {
  /** The Express test file and the titles of its describe/it, as in Express. */
  it: string;
  /** The body of `(req, res) => { … }`, as the Express test's middleware. */
  run: string;
  req?: CaseRequest;
  expect: CaseExpect;
  /** Why fnhost differs from Express here, when it does on purpose. */
  differs?: string;
}

export const THROWN = 'a thrown error is a 500 whose text goes to the execution record, never to the caller (docs/runtime.md, decision 6)';
