import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pollUntil } from '../helpers/wait.ts';
import { functionVars, spawnRuntime, type RunningRuntime } from './helpers/runtime.ts';

// runtime-image/tools/build-js.mjs, the image's build step: the runtime's sources as plain
// JavaScript. The built runtime is run here with Node's TypeScript support turned off
// (--no-experimental-strip-types, which the worker thread inherits), so any import still
// pointing at a .ts file fails the test instead of a pod.

const IMAGE_DIR = fileURLToPath(new URL('../../runtime-image/', import.meta.url));
const TOOL = join(IMAGE_DIR, 'tools', 'build-js.mjs');

const runTool = (src: string, out: string) => spawnSync(process.execPath, [TOOL, src, out], { encoding: 'utf8' });

describe('runtime image: build-js (the sources as JavaScript)', function () {
  this.timeout(60_000);
  let work: string;
  let dist: string;

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'fnhost-build-js-'));
    // As in the image: dist/ beside the runtime's package.json ("type": "module") and vendor/ (its bundled libraries).
    await copyFile(join(IMAGE_DIR, 'package.json'), join(work, 'package.json'));
    await cp(join(IMAGE_DIR, 'vendor'), join(work, 'vendor'), { recursive: true });
    dist = join(work, 'dist');
    const r = runTool(join(IMAGE_DIR, 'src'), dist);
    expect(r.status, r.stderr).to.equal(0);
  });
  after(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('writes one .js per source file, with every relative .ts specifier rewritten and line numbers kept', async () => {
    const sources = (await readdir(join(IMAGE_DIR, 'src'))).filter((n) => n.endsWith('.ts')).sort();
    const built = (await readdir(dist)).sort();
    expect(built).to.deep.equal(sources.map((n) => n.replace(/\.ts$/, '.js')));
    const main = await readFile(join(dist, 'main.js'), 'utf8');
    const supervisor = await readFile(join(dist, 'supervisor.js'), 'utf8');
    expect(supervisor).to.match(/new URL\('\.\/worker\.js', import\.meta\.url\)/);
    expect(main).to.match(/from '\.\/config\.js'/);
    for (const name of built) {
      const js = await readFile(join(dist, name), 'utf8');
      expect(js, name).to.not.match(/['"]\.\.?\/[^'"\n]*\.ts['"]/);
      const ts = await readFile(join(IMAGE_DIR, 'src', name.replace(/\.js$/, '.ts')), 'utf8');
      expect(js.split('\n').length, `${name} keeps the source's lines`).to.equal(ts.split('\n').length);
    }
  });

  it('refuses a relative .ts path it cannot rewrite, naming the file and line, and writes nothing for it', async () => {
    const src = join(work, 'bad-src');
    const out = join(work, 'bad-out');
    await rm(src, { recursive: true, force: true });
    await mkdir(src);
    await writeFile(join(src, 'a.ts'), "export const n: number = 1;\nconst file = './b.ts';\nexport { file };\n");
    const r = runTool(src, out);
    expect(r.status).to.equal(1);
    expect(r.stderr).to.include(`${join(src, 'a.ts')}:2:`);
    expect(r.stderr).to.include("const file = './b.ts'");
    const left = await readdir(out).catch(() => []);
    expect(left).to.not.include('a.js');
  });

  it('refuses a folder with no source, and a missing argument with its usage', async () => {
    const empty = await mkdtemp(join(work, 'empty-'));
    const r = runTool(empty, join(work, 'empty-out'));
    expect(r.status).to.equal(1);
    expect(r.stderr).to.include(`${empty} has no .ts file to build`);
    const usage = spawnSync(process.execPath, [TOOL], { encoding: 'utf8' });
    expect(usage.status).to.equal(2);
    expect(usage.stderr).to.include('usage: node tools/build-js.mjs SRC_DIR OUT_DIR');
  });

  describe('the built runtime, with TypeScript support off', () => {
    let rt: RunningRuntime;
    before(async () => {
      const dir = await mkdtemp(join(tmpdir(), 'fnhost-rt-'));
      const file = join(dir, 'handler.mjs');
      await writeFile(
        file,
        `export default async function (req, res) {
  if (req.path === '/spin') for (;;) {}
  res.json({ path: req.path, id: req.params.id ?? null, greeting: process.env.GREETING });
}\n`,
      );
      rt = await spawnRuntime(
        { PATH: process.env.PATH ?? '', GREETING: 'hej', PORT: '0', HOST: '127.0.0.1', ...functionVars(file, { routes: ['/items/:id'], timeoutMs: 1000 }) },
        dir,
        { main: join(dist, 'main.js'), nodeArgs: ['--no-experimental-strip-types'] },
      );
    });
    after(async () => rt?.stop());

    it('answers /healthz and a call in its worker thread, with routes and env', async () => {
      // 503 until the worker has loaded the function.
      const health = await pollUntil('/healthz 200', async () => {
        const r = await fetch(`${rt.url}/healthz`);
        return r.status === 200 ? r : null;
      }, 20_000, 20);
      expect(await health.json()).to.deep.equal({ status: 'ok' });
      const res = await fetch(`${rt.url}/items/42`);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ path: '/items/42', id: '42', greeting: 'hej' });
    });

    it('ends a call over its time limit and answers the next from a new worker (dist/worker.js)', async () => {
      const spin = await fetch(`${rt.url}/spin`);
      expect(spin.status).to.equal(504);
      expect(spin.headers.get('x-fnhost-error-kind')).to.equal('timeout');
      const again = await fetch(`${rt.url}/after`);
      expect(again.status).to.equal(200);
      expect(await again.json()).to.deep.equal({ path: '/after', id: null, greeting: 'hej' });
      expect(rt.lines.join('\n')).to.not.match(/ERR_UNKNOWN_FILE_EXTENSION|ERR_UNSUPPORTED_TYPESCRIPT/);
    });
  });
});
