import { expect } from 'chai';
import { MAX_ERROR_STACK_ENCODED, ownerConsoleText, ownerPrefixes, ownerStack } from '../../runtime-image/src/error-stack.ts';

// What of a thrown error's stack goes into the record: the frames in the function's folder,
// relative; never the runtime's own frames, Node's internals or the machine's paths.

const withStack = (stack: string) => Object.assign(new Error('x'), { stack });

describe('runtime: ownerStack', () => {
  const file = '/var/fnhost/function/index.mjs';
  const real = '/var/fnhost/function/..2026_11_25_23_00_00.123/index.mjs';

  it('keeps the frames in the function folder (source-mapped or the module itself), relative, and drops the others', () => {
    const stack = [
      'Error: boom',
      '    at explode (/var/fnhost/function/src/handler.ts:20:9)',
      '    at handler (file:///var/fnhost/function/index.mjs:3:120)',
      '    at handle (file:///opt/fnhost/runtime/dist/worker.js:101:33)',
      '    at node:internal/async_hooks:1:1',
    ].join('\n');
    expect(ownerStack(withStack(stack), [file])).to.equal('at explode (src/handler.ts:20:9)\nat handler (<module>:3:120)');
  });

  it('knows the real path Node names for a ConfigMap file (a symlink into a ..<timestamp> folder)', () => {
    const stack = 'Error: boom\n    at explode (/var/fnhost/function/..2026_11_25_23_00_00.123/src/handler.ts:20:9)\n    at file:///var/fnhost/function/..2026_11_25_23_00_00.123/index.mjs:1:5';
    expect(ownerStack(withStack(stack), [file, real])).to.equal('at explode (src/handler.ts:20:9)\nat <module>:1:5');
  });

  it('gives nothing for a stack with no frame of the function, or a thrown value that is no error', () => {
    expect(ownerStack(withStack('Error: boom\n    at node:internal/x:1:1'), [file])).to.equal(undefined);
    expect(ownerStack('a string', [file])).to.equal(undefined);
    expect(ownerStack(null, [file])).to.equal(undefined);
  });

  it('bounds the encoded stack, cutting between frames', () => {
    const frames = Array.from({ length: 500 }, (_, i) => `    at f${i} (/var/fnhost/function/src/deep.ts:${i + 1}:1)`);
    const kept = ownerStack(withStack(['Error: deep', ...frames].join('\n')), [file])!;
    expect(encodeURIComponent(kept).length).to.be.at.most(MAX_ERROR_STACK_ENCODED);
    const lines = kept.split('\n');
    expect(lines[0]).to.equal('at f0 (src/deep.ts:1:1)');
    for (const [i, line] of lines.entries()) expect(line).to.equal(`at f${i} (src/deep.ts:${i + 1}:1)`);
  });
});

describe('runtime: ownerConsoleText (a stack the handler logs)', () => {
  const prefixes = ownerPrefixes(['/var/fnhost/function/index.mjs']);

  it('keeps the message and the function\'s frames (relative, indented as printed), drops the runtime\'s and Node\'s', () => {
    const text = [
      'Error: boom',
      '    at explode (/var/fnhost/function/src/handler.ts:20:9)',
      '    at handle (file:///opt/fnhost/runtime-image/src/worker.ts:150:22)',
      '    at node:internal/async_hooks:1:1',
      'after',
    ].join('\n');
    expect(ownerConsoleText(text, prefixes)).to.equal('Error: boom\n    at explode (src/handler.ts:20:9)\nafter');
  });

  it('leaves text with no stack as written, including a line that merely mentions "at"', () => {
    expect(ownerConsoleText('looked at /opt/x\n  at ease', prefixes)).to.equal('looked at /opt/x\n  at ease');
  });
});
