import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { blockScript, extractBlocks, withPlatformStandIn, type DocBlock } from './blocks.ts';
import { DOCUMENTS, REPO } from './documents.ts';
import { ShellSession } from './shell-session.ts';

// Every shell block of README.md and docs/cli.md a user would run, run as the user runs it (issue
// 30): in order, in one shell per document, in a fresh folder inside the checkout (the README's
// first session runs `npx fnhost` from the checkout, where npx finds the checkout's own fnhost),
// with the user's PATH (npm's node_modules/.bin taken off), a home of its own and the machine's npm
// cache; a js/ts block whose first line is `// <file>` is saved under that name, as the README asks
// the reader to. The only stand-in: a `make start` line is not run, the test's own gateway (port 0,
// its data folder the session folder's .fnhost, so `cat .fnhost/token` reads its token) serves
// instead, and the document's http://127.0.0.1:8080 and :8081 are read as its addresses
// (blocks.ts withPlatformStandIn). docs/cli.md's blocks start where the README's first session
// leaves a reader: FNHOST_URL and FNHOST_TOKEN exported. A block marked
// `<!-- doc-test: skip reason="…" -->` is not run and must say why (test/README.md "Doc blocks").

const CHECKOUT = fileURLToPath(REPO);

/** The environment of the user's terminal: no npm-run variables or node_modules/.bin on PATH, no FNHOST_* of the test. */
function userEnv(home: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('FNHOST_') || key.startsWith('npm_') || key === 'NODE_OPTIONS' || key === 'INIT_CWD' || key === 'NODE') continue;
    env[key] = value;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => !/[/\\]node_modules[/\\]\.bin$/.test(dir))
    .join(delimiter);
  env.HOME = home;
  env.XDG_CONFIG_HOME = join(home, '.config');
  // The machine's npm cache (packages fetched once stay local), not the fresh home's empty one.
  env.npm_config_cache = process.env.npm_config_cache ?? join(homedir(), '.npm');
  env.npm_config_update_notifier = 'false';
  env.npm_config_fund = 'false';
  env.npm_config_audit = 'false';
  return { ...env, ...extra };
}

/** How long a block may take: the ones that install packages from the registry get longer. */
const blockTimeoutMs = (block: DocBlock) => (/npm (install|ci|init)/.test(block.text) ? 240_000 : 120_000);

for (const doc of DOCUMENTS) {
  const blocks = extractBlocks(readFileSync(new URL(doc, REPO), 'utf8'), doc);
  const run = blocks.filter((b) => (b.kind === 'shell' || b.kind === 'file') && b.skip === undefined);
  const skipped = blocks.filter((b) => b.skip !== undefined);

  describe(`${doc}: every shell block a user would run runs as written (real gateway, the CLI through npx)`, function () {
    this.timeout(300_000);
    let gw: RunningGateway;
    let session: ShellSession;
    let folder: string;
    let home: string;
    let failed: string | undefined;

    before(async () => {
      mkdirSync(join(CHECKOUT, 'test-output'), { recursive: true });
      folder = mkdtempSync(join(CHECKOUT, 'test-output', 'doc-blocks-'));
      home = mkdtempSync(join(tmpdir(), 'fnhost-doc-home-'));
      const scripts = mkdtempSync(join(tmpdir(), 'fnhost-doc-scripts-'));
      mkdirSync(join(folder, '.fnhost'), { mode: 0o700 });
      gw = await startGateway({ dataDir: join(folder, '.fnhost') });
      const extra: Record<string, string> = doc === 'README.md' ? {} : { FNHOST_URL: gw.url, FNHOST_TOKEN: gw.token };
      session = new ShellSession(folder, userEnv(home, extra), scripts);
    });
    after(async () => {
      session?.kill();
      await gw?.stop();
      for (const dir of [folder, home]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it(`has blocks to run, and every block it does not run says why (${skipped.length} not run)`, () => {
      expect(run.length).to.be.greaterThan(0);
      for (const b of skipped) expect(b.skip, `${doc}:${b.line}`).to.be.a('string').and.not.equal('');
    });

    let cwd: string | undefined;
    for (const block of run) {
      const title = block.kind === 'file' ? `${doc}:${block.line}: saves ${block.fileName}` : `${doc}:${block.line}: ${block.text.split('\n')[0]!.slice(0, 70)}`;
      it(title, async () => {
        expect(failed, `an earlier block failed (${failed}); this one depends on it`).to.equal(undefined);
        try {
          if (block.kind === 'file') {
            writeFileSync(join(cwd ?? folder, block.fileName!), block.text);
            return;
          }
          const script = withPlatformStandIn(blockScript(block), { url: gw.url, adminUrl: gw.adminUrl });
          const result = await session.run(script, blockTimeoutMs(block));
          expect(result.code, `${doc}:${block.line} failed (exit ${result.code}); its output:\n${result.output.slice(-6000)}`).to.equal(0);
          cwd = result.cwd;
        } catch (err) {
          failed = `${doc}:${block.line}`;
          throw err;
        }
      });
    }
  });
}
