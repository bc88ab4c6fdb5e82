import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, startRuntime } from './helpers/runtime.ts';

// The module shapes a function may have: ESM default, named `handler`, CommonJS; a `.js`
// file of either kind (detected, whatever package.json "type" sits above it); sync and async.
const CASES: Array<{ title: string; file: string; code: string }> = [
  { title: 'ESM export default (sync)', file: 'h.mjs', code: `export default function (req, res) { res.json({ shape: 'esm-default' }); }` },
  { title: 'ESM named export handler (async)', file: 'h.mjs', code: `export async function handler(req, res) { await null; res.json({ shape: 'esm-named' }); }` },
  { title: 'CommonJS module.exports = fn (.cjs)', file: 'h.cjs', code: `module.exports = (req, res) => res.json({ shape: 'cjs', dirname: typeof __dirname, req: typeof require('node:path').join });` },
  { title: 'CommonJS exports.handler (.cjs, async)', file: 'h.cjs', code: `exports.handler = async (req, res) => { res.json({ shape: 'cjs-named' }); };` },
  { title: '.js holding CommonJS', file: 'h.js', code: `const os = require('node:os');\nmodule.exports = async function (req, res) { res.json({ shape: 'js-cjs', os: typeof os.platform }); };` },
  { title: '.js holding ESM', file: 'h.js', code: `import { platform } from 'node:os';\nexport default (req, res) => res.json({ shape: 'js-esm', os: typeof platform });` },
  { title: '.js holding ESM with only top-level await', file: 'h.js', code: `const ready = await Promise.resolve('yes');\nexport const handler = (req, res) => res.json({ shape: 'js-tla', ready });` },
];

const EXPECTED: Record<string, Record<string, string>> = {
  'ESM export default (sync)': { shape: 'esm-default' },
  'ESM named export handler (async)': { shape: 'esm-named' },
  'CommonJS module.exports = fn (.cjs)': { shape: 'cjs', dirname: 'string', req: 'function' },
  'CommonJS exports.handler (.cjs, async)': { shape: 'cjs-named' },
  '.js holding CommonJS': { shape: 'js-cjs', os: 'function' },
  '.js holding ESM': { shape: 'js-esm', os: 'function' },
  '.js holding ESM with only top-level await': { shape: 'js-tla', ready: 'yes' },
};

describe('runtime: module shapes', function () {
  for (const c of CASES) {
    it(`loads ${c.title}`, async () => {
      const rt = await startRuntime({ code: c.code, file: c.file });
      try {
        const res = await fetch(rt.url + '/');
        expect(res.status, await res.clone().text()).to.equal(200);
        expect(await res.json()).to.deep.equal(EXPECTED[c.title]);
      } finally {
        await rt.stop();
      }
    });
  }

  for (const type of ['module', 'commonjs']) {
    it(`detects the .js kind under a package.json with "type": "${type}"`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'fnhost-scope-'));
      try {
        await writeFile(join(dir, 'package.json'), JSON.stringify({ type }));
        for (const [code, shape] of [
          [`module.exports = (req, res) => res.json({ shape: 'cjs' });`, 'cjs'],
          [`export default (req, res) => res.json({ shape: 'esm' });`, 'esm'],
        ] as const) {
          const path = join(dir, `${shape}.js`);
          await writeFile(path, code);
          const rt = await startRuntime({ path });
          try {
            const res = await fetch(rt.url + '/');
            expect(res.status, await res.clone().text()).to.equal(200);
            expect(await res.json()).to.deep.equal({ shape });
          } finally {
            await rt.stop();
          }
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  it('a module without a handler is a load error that says how to export one', async () => {
    const rt = await startRuntime({ code: 'export const notAHandler = 1;' });
    try {
      const res = await fetch(rt.url + '/');
      expect(res.status).to.equal(500);
      expect(res.headers.get('x-fnhost-error-kind')).to.equal('load');
      expect(decodeURIComponent(res.headers.get('x-fnhost-error')!)).to.match(/^the module exports no handler: use `export default function/);
    } finally {
      await rt.stop();
    }
  });

  it('serves /healthz without reaching user code, and stops cleanly on SIGTERM', async () => {
    const rt = await startRuntime({ code: `export default (req, res) => { throw new Error('user code reached'); }` });
    // 503 "starting" until the worker has loaded the module, then 200.
    const health = await eventually(async () => {
      const r = await fetch(rt.url + '/healthz');
      return r.status === 200 ? r : undefined;
    }, 'a healthy runtime');
    expect(await health.json()).to.deep.equal({ status: 'ok' });
    const exited = new Promise<number | null>((r) => rt.process.once('exit', (code) => r(code)));
    rt.process.kill('SIGTERM');
    expect(await exited).to.equal(0);
    await rt.stop();
  });
});
