import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { bundleHandler } from '../../cli/src/bundle/bundle.ts';
import { hasLargeInlineMap, inlineMapOffset, LazySourceMap, lookup } from '../../runtime-image/src/lazy-source-map.ts';

// A large bundle's source map read lazily (runtime-image/src/lazy-source-map.ts): the same answers
// as Node's own SourceMap for a real esbuild bundle made by the CLI's bundler.

describe('runtime: lazy source maps of large bundles', function () {
  this.timeout(120_000);
  let dir: string;
  let file: string;
  let code: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-lazymap-'));
    let lib = '';
    for (let i = 0; i < 9000; i++) lib += `export function fn${i}(a, b) {\n  const x = a + b * ${i};\n  if (x > ${i}) return "v${i}" + x;\n  return x - 1;\n}\n`;
    writeFileSync(join(dir, 'lib.js'), lib);
    writeFileSync(join(dir, 'handler.js'), 'import * as lib from "./lib.js";\nexport default (req, res) => {\n  if (req.query.boom) throw new Error("boom");\n  res.json({ n: Object.keys(lib).length });\n};\n');
    code = (await bundleHandler(join(dir, 'handler.js'), dir)).code;
    file = join(dir, 'out.mjs');
    writeFileSync(file, code);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the inline map at the end of the file; over 1 MiB it is read lazily', () => {
    const found = inlineMapOffset(file)!;
    expect(found.size).to.equal(Buffer.byteLength(code));
    expect(found.size - found.at).to.be.above(1024 * 1024);
    expect(hasLargeInlineMap(file)).to.equal(true);
    const small = join(dir, 'small.mjs');
    writeFileSync(small, 'export default () => 1;\n');
    expect(hasLargeInlineMap(small)).to.equal(false);
  });

  it('maps generated places as Node\'s SourceMap does', () => {
    const payload = JSON.parse(Buffer.from(code.slice(code.lastIndexOf('base64,') + 7).trim(), 'base64').toString('utf8')) as { mappings: string; sources: string[] };
    const node = new SourceMap(payload as never);
    const lines = code.split('\n');
    let checked = 0;
    for (let line = 0; line < lines.length; line++) {
      const length = lines[line]!.length;
      for (let col = 0; col < length; col += Math.max(1, Math.floor(length / 120))) {
        const entry = node.findEntry(line, col) as { originalSource?: string; originalLine?: number; originalColumn?: number };
        const mine = lookup(payload.mappings, payload.sources, line + 1, col + 1);
        if (entry.originalSource === undefined) continue;
        expect(mine, `${line + 1}:${col + 1}`).to.deep.equal({ source: payload.sources.find((s) => entry.originalSource!.endsWith(s))!, line: entry.originalLine! + 1, column: entry.originalColumn! + 1 });
        checked++;
      }
    }
    expect(checked).to.be.above(50);
  });

  it('maps a frame of the thrown error to the user\'s file and line', async () => {
    const mod = (await import(file)) as { default: (req: unknown, res: unknown) => void };
    let stack = '';
    try {
      mod.default({ query: { boom: '1' } }, {});
    } catch (err) {
      stack = (err as Error).stack!;
    }
    const frame = stack.split('\n').find((l) => l.includes(file))!.trim().replace(`file://${file}`, '<module>');
    const [, l, c] = /<module>:(\d+):(\d+)/.exec(frame)!;
    const payload = JSON.parse(Buffer.from(code.slice(code.lastIndexOf('base64,') + 7).trim(), 'base64').toString('utf8'));
    const entry = new SourceMap(payload).findEntry(Number(l) - 1, Number(c) - 1) as { originalLine: number; originalColumn: number };
    // The throw is on the handler's third line, as Node's own support names it.
    expect(entry.originalLine + 1).to.equal(3);
    expect(new LazySourceMap(file).mapFrame(frame)).to.equal(`at Module.handler_default (handler.js:3:${entry.originalColumn + 1})`);
  });
});
