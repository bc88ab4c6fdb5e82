import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeconfigText } from './helpers/kubeconfig.ts';
import { CONTROLLED_HANDLER, startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { isolatedHome, runCli, type RunResult } from './helpers/run.ts';

// The namespace of the current kube context, through the real fnhost binary
// run as a process, over real HTTP. A cluster-mode gateway needs a cluster, so
// the cluster side is a small HTTP server that answers like one (GET /api/v1/info
// says "cluster") and records the ?namespace= each request carries; the
// one-machine side is the real local platform, where the kube context must not
// change anything. KUBECONFIG points at temp files whose current context has
// namespace team-a. (test/gateway/cluster/gateway.cluster.test.ts runs the
// binary against the real cluster-mode gateway too.)

const TOKEN = 'cluster-stand-in-token';

function ok(result: RunResult): RunResult {
  expect(result.code, `exit ${result.code}; stdout: ${result.stdout}; stderr: ${result.stderr}`).to.equal(0);
  return result;
}

interface Seen {
  path: string;
  namespace: string | null;
}

/** Answers like a cluster-mode gateway whose default namespace is fnhost-apps; records each request. */
async function startClusterStandIn(): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://stand-in');
    seen.push({ path: url.pathname, namespace: url.searchParams.get('namespace') });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    req.resume();
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return send(401, { error: 'unauthorized', message: 'the token is wrong' });
    if (url.pathname === '/api/v1/info') return send(200, { mode: 'cluster', default_namespace: 'fnhost-apps' });
    const namespace = url.searchParams.get('namespace') ?? 'fnhost-apps';
    if (url.pathname === '/api/v1/functions') return send(200, { functions: [{ name: `in-${namespace}`, namespace }] });
    return send(404, { error: 'not_found', message: `function not found in namespace "${namespace}"` });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('fnhost CLI: the namespace of the current kube context (real process, real HTTP)', function () {
  this.timeout(120_000);
  let dir: string;
  let kubeconfig: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-cli-kube-'));
    kubeconfig = join(dir, 'config');
    writeFileSync(kubeconfig, kubeconfigText({ current: 'dev', contexts: [{ name: 'prod', namespace: 'team-p' }, { name: 'dev', namespace: 'team-a' }] }));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('against a cluster-mode gateway', () => {
    let gw: Awaited<ReturnType<typeof startClusterStandIn>>;
    let home: ReturnType<typeof isolatedHome>;
    let fnhost: (args: string[], env?: Record<string, string | undefined>) => Promise<RunResult>;
    before(async () => {
      gw = await startClusterStandIn();
      home = isolatedHome();
      fnhost = (args, env = {}) => runCli(args, { env: { ...home.env, FNHOST_URL: gw.url, FNHOST_TOKEN: TOKEN, KUBECONFIG: kubeconfig, ...env }, timeoutMs: 60_000 });
    });
    beforeEach(() => {
      gw.seen.length = 0;
    });
    after(async () => {
      await gw?.close();
      home?.cleanup();
    });

    it("sends the current kube context's namespace, after asking the gateway its mode; --output json prints only the JSON", async () => {
      const result = ok(await fnhost(['function:list', '--output', 'json']));
      expect(result.stderr).to.equal('');
      expect(JSON.parse(result.stdout)).to.deep.equal({ functions: [{ name: 'in-team-a', namespace: 'team-a' }] });
      expect(gw.seen).to.deep.equal([
        { path: '/api/v1/info', namespace: null },
        { path: '/api/v1/functions', namespace: 'team-a' },
      ]);
    });

    it('--namespace (-n) and FNHOST_NAMESPACE come first, and then the kube context is not read at all', async () => {
      writeFileSync(join(dir, 'broken'), 'contexts: [\n');
      ok(await fnhost(['function:list', '-n', 'team-b', '-o', 'json'], { KUBECONFIG: join(dir, 'broken') }));
      ok(await fnhost(['function:list', '-o', 'json'], { FNHOST_NAMESPACE: 'team-c', KUBECONFIG: join(dir, 'broken') }));
      ok(await fnhost(['function:list', '--namespace', 'team-d', '-o', 'json'], { FNHOST_NAMESPACE: 'team-c' }));
      expect(gw.seen).to.deep.equal([
        { path: '/api/v1/functions', namespace: 'team-b' },
        { path: '/api/v1/functions', namespace: 'team-c' },
        { path: '/api/v1/functions', namespace: 'team-d' },
      ]);
    });

    it("merges a KUBECONFIG list like kubectl (missing files skipped, the first file's current-context wins)", async () => {
      const first = join(dir, 'first');
      writeFileSync(first, 'current-context: prod\n');
      ok(await fnhost(['function:list', '-o', 'json'], { KUBECONFIG: [join(dir, 'missing'), first, kubeconfig].join(':') }));
      expect(gw.seen.at(-1)).to.deep.equal({ path: '/api/v1/functions', namespace: 'team-p' });
    });

    it('sends no namespace when no kubeconfig exists (and does not ask the mode), or when the context sets none', async () => {
      ok(await fnhost(['function:list', '-o', 'json'], { KUBECONFIG: join(dir, 'missing') }));
      expect(gw.seen).to.deep.equal([{ path: '/api/v1/functions', namespace: null }]);
      const bare = join(dir, 'bare');
      writeFileSync(bare, kubeconfigText({ current: 'bare', contexts: [{ name: 'bare' }] }));
      const result = ok(await fnhost(['function:list', '-o', 'json'], { KUBECONFIG: bare, FNHOST_DEBUG: '1' }));
      expect(gw.seen.at(-1)).to.deep.equal({ path: '/api/v1/functions', namespace: null });
      expect(result.stderr).to.equal(
        `debug: server ${gw.url} (from FNHOST_URL), token from FNHOST_TOKEN, namespace (none sent) (from the gateway's default (the kube context "bare" sets no namespace))\n`,
      );
    });

    it('a broken kubeconfig is one error line naming the file (exit 1), with a hint to name the namespace', async () => {
      const broken = join(dir, 'broken');
      writeFileSync(broken, 'contexts: [\n  - name: dev\n');
      const result = await fnhost(['function:list', '-o', 'json'], { KUBECONFIG: broken });
      expect(result.code).to.equal(1);
      expect(result.stdout).to.equal('');
      const [error, hint, rest] = result.stderr.split('\n');
      expect(error).to.match(new RegExp(`^error: the kubeconfig file ${broken} is not valid: .+ \\(line \\d+, column \\d+\\)$`));
      expect(hint).to.match(/^hint: fix the file, or name the namespace with --namespace/);
      expect(rest).to.equal('');
      // Valid YAML of the wrong shape: the error names the field.
      writeFileSync(broken, 'current-context: dev\ncontexts:\n- name: dev\n  context: { namespace: [team-a] }\n');
      const shape = await fnhost(['function:list', '-o', 'json'], { KUBECONFIG: broken });
      expect(shape.code).to.equal(1);
      expect(shape.stdout).to.equal('');
      expect(shape.stderr.split('\n')[0]).to.equal(`error: the kubeconfig file ${broken} is not valid: contexts[0].context.namespace is a list, not a string`);
      expect(gw.seen.map((s) => s.path), 'only the mode was asked: nothing was listed').to.deep.equal(['/api/v1/info', '/api/v1/info']);
    });

    it('FNHOST_DEBUG=1 and the not-found hint say the namespace came from the kube context', async () => {
      const debug = ok(await fnhost(['function:list', '-o', 'json'], { FNHOST_DEBUG: '1' }));
      expect(debug.stderr).to.equal(`debug: server ${gw.url} (from FNHOST_URL), token from FNHOST_TOKEN, namespace team-a (from the kube context "dev" (${kubeconfig}))\n`);
      const missing = await fnhost(['function:get', 'nosuch']);
      expect(missing.code).to.equal(4);
      expect(missing.stderr).to.equal(
        `error: function "nosuch" not found in namespace team-a at ${gw.url}\n` +
          `hint: the namespace came from the kube context "dev" (${kubeconfig}); run fnhost function:list to see its functions, or pass --namespace\n`,
      );
    });

    it("login shows the namespace and its source; the kube context's is not saved, a named one is and then wins", async () => {
      const env = { FNHOST_URL: undefined, FNHOST_TOKEN: undefined };
      const path = join(home.home, '.config', 'fnhost', 'config.json');
      const login = ok(await fnhost(['login', '--url', gw.url, '--token', TOKEN], env));
      expect(login.stdout).to.equal(
        `✓ Logged in to ${gw.url}; saved to ${path}\n` + `Namespace: team-a (from the kube context "dev" (${kubeconfig}); not saved: each command reads the current kube context)\n`,
      );
      expect(JSON.parse(readFileSync(path, 'utf8'))).to.deep.equal({ url: gw.url, token: TOKEN });
      expect(gw.seen).to.deep.equal([
        { path: '/api/v1/info', namespace: null },
        { path: '/api/v1/functions', namespace: 'team-a' },
      ]);
      // With the saved login (no FNHOST_URL/TOKEN), the kube context still decides.
      ok(await fnhost(['function:list', '-o', 'json'], env));
      expect(gw.seen.at(-1)).to.deep.equal({ path: '/api/v1/functions', namespace: 'team-a' });

      const named = ok(await fnhost(['login', '--url', gw.url, '--token', TOKEN, '-n', 'team-z'], env));
      expect(named.stdout).to.equal(`✓ Logged in to ${gw.url} (namespace team-z); saved to ${path}\nNamespace: team-z (from --namespace; saved with the login)\n`);
      expect(JSON.parse(readFileSync(path, 'utf8'))).to.deep.equal({ url: gw.url, token: TOKEN, namespace: 'team-z' });
      const debug = ok(await fnhost(['function:list', '-o', 'json'], { ...env, FNHOST_DEBUG: '1' }));
      expect(gw.seen.at(-1)).to.deep.equal({ path: '/api/v1/functions', namespace: 'team-z' });
      expect(debug.stderr).to.contain(`namespace team-z (from the saved login (${path}))`);

      const bare = join(dir, 'bare-login');
      writeFileSync(bare, kubeconfigText({ current: 'bare', contexts: [{ name: 'bare' }] }));
      const fallback = ok(await fnhost(['login', '--url', gw.url, '--token', TOKEN], { ...env, KUBECONFIG: bare }));
      expect(fallback.stdout.split('\n')[1]).to.equal(`Namespace: fnhost-apps (the gateway's default (the kube context "bare" sets no namespace); pass --namespace to save another)`);
    });
  });

  describe('against a one-machine gateway (the real local platform)', () => {
    let p: CliPlatform;
    let fnhost: (args: string[], env?: Record<string, string | undefined>) => Promise<RunResult>;
    before(async () => {
      p = await startCliPlatform();
      fnhost = (args, env = {}) => runCli(args, { env: { ...p.env, KUBECONFIG: kubeconfig, ...env }, timeoutMs: 60_000 });
    });
    after(async () => {
      await p?.stop();
    });

    it('the kube context changes nothing: no namespace is sent, functions go to default', async () => {
      const created = ok(await fnhost(['function:create', 'kube-ns', '--file', p.file('kube-ns.js', CONTROLLED_HANDLER), '-o', 'json']));
      expect(created.stderr).to.equal('');
      expect(JSON.parse(created.stdout)).to.include({ name: 'kube-ns', namespace: 'default' });
      const debug = ok(await fnhost(['function:get', 'kube-ns', '-o', 'json'], { FNHOST_DEBUG: '1' }));
      expect(JSON.parse(debug.stdout)).to.include({ name: 'kube-ns', namespace: 'default' });
      expect(debug.stderr).to.equal(`debug: server ${p.url} (from FNHOST_URL), token from FNHOST_TOKEN, namespace (none sent) (from the gateway's default)\n`);
    });

    it('a broken kubeconfig does not matter, since it is not consulted', async () => {
      const broken = join(dir, 'broken-local');
      writeFileSync(broken, 'contexts: [\n');
      const list = ok(await fnhost(['function:list', '-o', 'json'], { KUBECONFIG: broken }));
      expect(list.stderr).to.equal('');
      expect(JSON.parse(list.stdout).functions.map((f: { name: string }) => f.name)).to.include('kube-ns');
    });

    it('login prints its one line, as before (no namespace line on one machine)', async () => {
      const path = join(p.home, '.config', 'fnhost', 'config.json');
      const login = ok(await fnhost(['login', '--url', p.url, '--token', p.token], { FNHOST_URL: undefined, FNHOST_TOKEN: undefined }));
      expect(login.stdout).to.equal(`✓ Logged in to ${p.url}; saved to ${path}\n`);
      expect(login.stderr).to.equal('');
    });
  });
});
