import { expect } from 'chai';
import { CodeRefusedError, FunctionFailedToLoadError, loadFailureText, syntaxErrorPosition } from '../../gateway/src/functions/code-check.ts';
import { errorBody, recordText, runtimeEndedCall } from '../../gateway/src/invoke/errors.ts';
import type { FunctionRecord } from '@fnhost/core';

describe('gateway: broken code texts (code-check.ts)', () => {
  it('places a syntax error at its 1-based line and column, as a module or as CommonJS', () => {
    expect(syntaxErrorPosition('export default function (req, res) {\n  res.json({ a: 1 }\n}\n', true)).to.equal('line 3, column 1');
    expect(syntaxErrorPosition('module.exports = (req, res) => {\n  res.send(1;\n};\n', false)).to.equal('line 2, column 13');
    // What parses gets no position: top-level await in a module, return at the top of CommonJS, a hashbang.
    expect(syntaxErrorPosition('#!/usr/bin/env node\nconst x = await 1;\nexport default () => x;\n', true)).to.equal(undefined);
    expect(syntaxErrorPosition('if (!module) return;\nmodule.exports = () => 1;\n', false)).to.equal(undefined);
  });

  it('adds the position to V8\'s SyntaxError only, and only where acorn finds one', () => {
    expect(loadFailureText('syntax', 'SyntaxError: missing ) after argument list', 'export default () => {\n  f(1;\n};\n', true)).to.equal('SyntaxError: missing ) after argument list (line 2, column 6)');
    // acorn finds nothing (V8 refused for a reason a parser cannot see): V8's text, no invented position.
    expect(loadFailureText('syntax', "SyntaxError: The requested module 'node:fs' does not provide an export named 'nope'", 'import { nope } from "node:fs";\nexport default () => 1;\n', true)).to.equal(
      "SyntaxError: The requested module 'node:fs' does not provide an export named 'nope'",
    );
    expect(loadFailureText('failed', 'the module threw while loading: Error: x (line 1, column 7)', 'throw new Error("x")', false)).to.equal('the module threw while loading: Error: x (line 1, column 7)');
  });

  it('refused code is 400 invalid_code with its message shown; a load failure shows its callers a generic body and its record the reason', () => {
    const refused = new CodeRefusedError('no_handler', 'the module exports no handler: use `export default …`');
    expect(refused.message).to.equal('code exports no handler: use `export default …`');
    expect(JSON.parse(errorBody(refused).body)).to.deep.equal({ error: 'invalid_code', message: refused.message });
    expect(errorBody(refused).status).to.equal(400);
    const fn = { code: 'export default () => {\n  f(1;\n};\n' } as FunctionRecord;
    const ended = runtimeEndedCall('load', 500, 'SyntaxError: missing ) after argument list', fn)!;
    expect(ended).to.be.instanceOf(FunctionFailedToLoadError);
    expect(JSON.parse(errorBody(ended).body)).to.deep.equal({ error: 'function_failed_to_load', message: 'the function could not be loaded; its owner can see why in its logs' });
    expect(recordText(ended)).to.equal('SyntaxError: missing ) after argument list (line 2, column 6)');
  });
});
