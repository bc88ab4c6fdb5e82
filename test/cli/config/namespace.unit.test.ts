import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../../../cli/src/api/client.ts';
import { resolveConnection } from '../../../cli/src/config/connection.ts';
import { readLogin, writeLogin } from '../../../cli/src/config/login-file.ts';
import { loginFilePath } from '../../../cli/src/config/paths.ts';
import { loadYamlParser, type KubeconfigFile } from '../../../cli/src/config/kubeconfig.ts';
import { describeNamespaceSource, resolveNamespace, type GatewayMode, type NamespaceInputs } from '../../../cli/src/config/namespace.ts';
import { LocalIoError } from '../../../cli/src/errors.ts';
import { kubeconfigText } from '../helpers/kubeconfig.ts';

describe('cli: --namespace (functions on a cluster)', () => {
  let dir: string;
  let env: Record<string, string | undefined>;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-cli-ns-'));
    env = { XDG_CONFIG_HOME: join(dir, 'config') };
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('takes the namespace from --namespace, then FNHOST_NAMESPACE, then the saved login (for its server only), else none', async () => {
    expect((await resolveConnection({ flags: {}, env, cwd: dir })).namespace).to.equal(undefined);
    await writeLogin(loginFilePath(env), { url: 'https://fn.example', token: 't', namespace: 'team-a' });
    expect(await readLogin(loginFilePath(env))).to.deep.equal({ url: 'https://fn.example', token: 't', namespace: 'team-a' });
    expect((await resolveConnection({ flags: {}, env, cwd: dir })).namespace).to.equal('team-a');
    expect((await resolveConnection({ flags: { url: 'https://other.example' }, env, cwd: dir })).namespace, "another server does not get the login's namespace").to.equal(undefined);
    env.FNHOST_NAMESPACE = 'team-b';
    expect((await resolveConnection({ flags: {}, env, cwd: dir })).namespace).to.equal('team-b');
    expect((await resolveConnection({ flags: { namespace: 'team-c' }, env, cwd: dir })).namespace).to.equal('team-c');
  });

  it('names a bad namespace and where it came from', async () => {
    await resolveConnection({ flags: { namespace: 'Team_A' }, env, cwd: dir }).then(
      () => expect.fail('expected an error'),
      (err: Error) => expect(err.message).to.equal('--namespace "Team_A" is not a namespace name: lowercase letters, digits and "-", at most 63 characters'),
    );
    env.FNHOST_NAMESPACE = 'x'.repeat(64);
    await resolveConnection({ flags: {}, env, cwd: dir }).then(
      () => expect.fail('expected an error'),
      (err: Error) => expect(err.message).to.match(/^FNHOST_NAMESPACE "x+" is not a namespace name/),
    );
  });

  it('sends ?namespace= on function and function-policy requests only', async () => {
    const seen: string[] = [];
    const server: Server = createServer((req, res) => {
      seen.push(req.url!);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"functions":[],"logs":[],"pagination":{}}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const client = new ApiClient({ url, token: 't', namespace: 'team-a' });
      await client.listFunctions();
      await client.listLogs('hello', { status: 'all', limit: 50, page: 1 });
      await client.getFunction('hello');
      await new ApiClient({ url, token: 't' }).getFunction('hello');
      expect(seen).to.deep.equal([
        '/api/v1/functions?namespace=team-a',
        '/api/v1/functions/hello/logs?status=all&limit=50&page=1&namespace=team-a',
        '/api/v1/functions/hello?namespace=team-a',
        '/api/v1/functions/hello',
      ]);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

// The order of config/namespace.ts as a function of its inputs: the flag, the
// environment, the saved login, and the kubeconfig files' contents (parsed by
// the real YAML parser, js-yaml) with the gateway's mode. The later inputs are
// functions so that the test can also check when each is asked for.
describe('cli: resolveNamespace (flag > FNHOST_NAMESPACE > saved login > kube context in cluster mode > none)', () => {
  const KUBE = kubeconfigText({ current: 'dev', contexts: [{ name: 'dev', namespace: 'team-a' }, { name: 'bare' }] });
  const asked: string[] = [];
  beforeEach(() => {
    asked.length = 0;
  });

  function inputs(over: Partial<NamespaceInputs> & { files?: KubeconfigFile[]; mode?: GatewayMode } = {}): NamespaceInputs {
    const { files = [{ path: '/home/ada/.kube/config', text: KUBE }], mode = 'cluster', ...rest } = over;
    return {
      env: {},
      kubeconfig: async () => {
        asked.push('kubeconfig');
        return files;
      },
      gatewayMode: async () => {
        asked.push('mode');
        return mode;
      },
      yamlParser: async () => {
        asked.push('yaml');
        return loadYamlParser();
      },
      ...rest,
    };
  }

  it('takes each source in turn, and reads nothing later than the one that answers', async () => {
    const login = { file: '/home/ada/.config/fnhost/config.json', namespace: 'from-login' };
    const env = { FNHOST_NAMESPACE: 'from-env' };
    expect(await resolveNamespace(inputs({ flag: 'from-flag', env, login }))).to.deep.equal({ namespace: 'from-flag', source: { kind: 'flag' } });
    expect(await resolveNamespace(inputs({ env, login }))).to.deep.equal({ namespace: 'from-env', source: { kind: 'env' } });
    expect(await resolveNamespace(inputs({ login }))).to.deep.equal({ namespace: 'from-login', source: { kind: 'login', file: login.file } });
    expect(asked, 'nothing of the kube context was read').to.deep.equal([]);
    expect(await resolveNamespace(inputs({ login: { file: login.file } }))).to.deep.equal({
      namespace: 'team-a',
      source: { kind: 'kube-context', context: 'dev', file: '/home/ada/.kube/config' },
    });
    expect(asked).to.deep.equal(['kubeconfig', 'mode', 'yaml']);
  });

  it('blank values count as absent', async () => {
    expect(await resolveNamespace(inputs({ flag: ' ', env: { FNHOST_NAMESPACE: '' }, login: { file: '/l', namespace: ' ' } }))).to.deep.include({ namespace: 'team-a' });
  });

  it('in one-machine mode the kube context does not count (nothing sent, as before namespaces), and its file is not parsed', async () => {
    const broken = [{ path: '/k/broken', text: 'contexts: [\n' }];
    expect(await resolveNamespace(inputs({ mode: 'local', files: broken }))).to.deep.equal({ namespace: undefined, source: { kind: 'gateway-default', mode: 'local' } });
    expect(asked).to.deep.equal(['kubeconfig', 'mode']);
  });

  it('does not ask the gateway its mode when there is no kubeconfig file, nor consult the kube context without a way to ask', async () => {
    expect(await resolveNamespace(inputs({ files: [] }))).to.deep.equal({ namespace: undefined, source: { kind: 'gateway-default' } });
    expect(asked).to.deep.equal(['kubeconfig']);
    asked.length = 0;
    expect(await resolveNamespace({ ...inputs(), gatewayMode: undefined })).to.deep.equal({ namespace: undefined, source: { kind: 'gateway-default' } });
    expect(asked).to.deep.equal([]);
  });

  it('a current context without a namespace, or no current context, leaves the gateway its default', async () => {
    const bare = [{ path: '/k', text: kubeconfigText({ current: 'bare', contexts: [{ name: 'bare' }] }) }];
    expect(await resolveNamespace(inputs({ files: bare }))).to.deep.equal({ namespace: undefined, source: { kind: 'gateway-default', mode: 'cluster', context: 'bare' } });
    const none = [{ path: '/k', text: kubeconfigText({ contexts: [{ name: 'dev', namespace: 'team-a' }] }) }];
    expect(await resolveNamespace(inputs({ files: none }))).to.deep.equal({ namespace: undefined, source: { kind: 'gateway-default', mode: 'cluster' } });
  });

  it('merges several KUBECONFIG files as kubectl does (first current-context wins)', async () => {
    const files = [
      { path: '/k/first', text: 'current-context: prod\n' },
      { path: '/k/second', text: kubeconfigText({ current: 'dev', contexts: [{ name: 'prod', namespace: 'team-p' }, { name: 'dev', namespace: 'team-a' }] }) },
    ];
    expect(await resolveNamespace(inputs({ files }))).to.deep.equal({ namespace: 'team-p', source: { kind: 'kube-context', context: 'prod', file: '/k/second' } });
  });

  it('a broken kubeconfig is an error naming the file only when the kube context is consulted', async () => {
    const files = [{ path: '/k/broken', text: 'contexts: [\n' }];
    const err = await resolveNamespace(inputs({ files })).then(
      () => expect.fail('expected an error'),
      (e: LocalIoError) => e,
    );
    expect(err).to.be.instanceOf(LocalIoError);
    expect(err.message).to.match(/^the kubeconfig file \/k\/broken is not valid: /);
    expect(await resolveNamespace(inputs({ files, flag: 'team-b' }))).to.deep.include({ namespace: 'team-b' });
    expect(await resolveNamespace(inputs({ files, login: { file: '/l', namespace: 'team-c' } }))).to.deep.include({ namespace: 'team-c' });
  });

  it("checks the kube context's namespace as a name, naming the context and file", async () => {
    const files = [{ path: '/k', text: kubeconfigText({ current: 'dev', contexts: [{ name: 'dev', namespace: 'Team_A' }] }) }];
    await resolveNamespace(inputs({ files })).then(
      () => expect.fail('expected an error'),
      (e: Error) => expect(e.message).to.equal('the namespace of kube context "dev" in /k "Team_A" is not a namespace name: lowercase letters, digits and "-", at most 63 characters'),
    );
  });

  it('describes each source for people', () => {
    expect(describeNamespaceSource({ kind: 'flag' })).to.equal('--namespace');
    expect(describeNamespaceSource({ kind: 'env' })).to.equal('FNHOST_NAMESPACE');
    expect(describeNamespaceSource({ kind: 'login', file: '/c.json' })).to.equal('the saved login (/c.json)');
    expect(describeNamespaceSource({ kind: 'kube-context', context: 'dev', file: '/k' })).to.equal('the kube context "dev" (/k)');
    expect(describeNamespaceSource({ kind: 'gateway-default', mode: 'cluster' })).to.equal("the gateway's default");
    expect(describeNamespaceSource({ kind: 'gateway-default', mode: 'cluster', context: 'bare' })).to.equal(`the gateway's default (the kube context "bare" sets no namespace)`);
  });
});

describe('cli: resolveConnection reads KUBECONFIG (or ~/.kube/config) and asks the server its mode', () => {
  let dir: string;
  let env: Record<string, string | undefined>;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-cli-nskube-'));
    env = { XDG_CONFIG_HOME: join(dir, 'config'), FNHOST_URL: 'https://fn.example', FNHOST_TOKEN: 'tok' };
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('uses the current context of KUBECONFIG against a cluster, asking with the resolved server and token', async () => {
    await writeFile(join(dir, 'kc'), kubeconfigText({ current: 'dev', contexts: [{ name: 'dev', namespace: 'team-a' }] }));
    env.KUBECONFIG = `${join(dir, 'missing')}:kc`;
    const servers: unknown[] = [];
    const c = await resolveConnection({ flags: {}, env, cwd: dir, home: dir, gatewayMode: async (server) => (servers.push(server), 'cluster') });
    expect(c).to.include({ url: 'https://fn.example', token: 'tok', namespace: 'team-a' });
    expect(c.namespaceSource).to.deep.equal({ kind: 'kube-context', context: 'dev', file: join(dir, 'kc') });
    expect(servers).to.deep.equal([{ url: 'https://fn.example', urlSource: 'FNHOST_URL', token: 'tok', tokenSource: 'FNHOST_TOKEN' }]);
    const local = await resolveConnection({ flags: {}, env, cwd: dir, home: dir, gatewayMode: async () => 'local' });
    expect(local.namespace).to.equal(undefined);
  });

  it('falls back to ~/.kube/config, and asks nothing when no kubeconfig exists', async () => {
    let asked = 0;
    const gatewayMode = async () => (asked++, 'cluster' as const);
    expect((await resolveConnection({ flags: {}, env, cwd: dir, home: dir, gatewayMode })).namespace).to.equal(undefined);
    expect(asked).to.equal(0);
    await mkdir(join(dir, '.kube'));
    await writeFile(join(dir, '.kube', 'config'), kubeconfigText({ current: 'dev', contexts: [{ name: 'dev', namespace: 'team-h' }] }));
    expect((await resolveConnection({ flags: {}, env, cwd: dir, home: dir, gatewayMode })).namespace).to.equal('team-h');
    expect(asked).to.equal(1);
  });
});
