import { expect } from 'chai';
import { copyFile, cp, link, mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';

// A gateway run from a checkout below a folder only its user may enter (a clone in `mktemp -d`,
// 0700, or in /root), with its node binary there too, as `npx node` gives it. As root, each
// runtime's bubblewrap runs under the runtime's own unprivileged uid, which cannot traverse that
// folder: the sandbox must bind copies staged below its own root (sandbox.ts stageShared), not
// the originals. Without that, every call was a 502 "Can't find source path /proc/self/fd/4:
// Permission denied" (checked: this test fails so at 387614b^).

const REPO = fileURLToPath(new URL('../../', import.meta.url));

describe('the sandbox from a checkout below a 0700 folder (real gateway, real sandboxes)', function () {
  this.timeout(120_000);
  let privateDir: string;
  let gw: RunningGateway | undefined;

  before(async () => {
    privateDir = await mkdtemp(join(tmpdir(), 'fnhost-private-'));
    expect((await stat(privateDir)).mode & 0o777, 'mkdtemp makes a 0700 folder').to.equal(0o700);
    const checkout = join(privateDir, 'checkout');
    // The repository's files; its packages are reached through a link (node follows it to the
    // original, which the gateway's user reads; the runtime imports no package).
    await cp(REPO, checkout, { recursive: true, filter: (src) => !relative(REPO, src).split(sep).some((part) => part === 'node_modules' || part === '.git') });
    await symlink(join(REPO, 'node_modules'), join(checkout, 'node_modules'));
    const node = join(privateDir, 'node');
    await link(process.execPath, node).catch(() => copyFile(process.execPath, node));
    gw = await startGateway({ node, main: join(checkout, 'gateway', 'src', 'main.ts'), dataDir: join(privateDir, 'data') });
  });
  after(async () => {
    await gw?.stop();
    await rm(privateDir, { recursive: true, force: true });
  });

  it('runs functions in their sandboxes: a create, a call and a pooled runtime each answer', async () => {
    const api = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(gw!.url + path, { method, headers: { authorization: `Bearer ${gw!.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as Record<string, any> };
    };
    const info = await api('GET', '/api/v1/info');
    // This machine can sandbox: a fallback here would make the test prove nothing.
    expect(info.body.sandbox, gw!.output()).to.deep.equal({ enabled: true });
    for (const name of ['first', 'second']) {
      // The create runs the module's top level in a sandbox; the call is served by another.
      const created = await api('POST', '/api/v1/functions', { name, code: `export default (req, res) => res.json({ name: '${name}', uid: process.getuid(), node: process.execPath })` });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const r = await fetch(`${gw!.url}/invoke/${created.body.function_id}`);
      const text = await r.text();
      expect(r.status, text).to.equal(200);
      // The runtime sees node at the path it was started with (the staged copy is bound there).
      expect(JSON.parse(text)).to.deep.equal({ name, uid: 1000, node: join(privateDir, 'node') });
    }
  });
});
