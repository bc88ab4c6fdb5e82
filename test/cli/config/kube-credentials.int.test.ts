import { expect } from 'chai';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeCredentialError, kubeCredential } from '../../../cli/src/config/kube-credentials.ts';

// The current kube context's credential through client-node's KubeConfig: a
// static token, an exec credential plugin (a real process printing an
// ExecCredential), and the refusals for contexts that have no bearer token.

function kubeconfig(user: Record<string, unknown>, context = 'dev'): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': context,
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: context, context: { cluster: 'c', user: 'u', namespace: 'team-a' } }],
  });
}

describe('cli: the kube context\'s credential (fnhost login --kube)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-kubecred-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const env = (file: string) => ({ KUBECONFIG: file });

  it('takes a static token', async () => {
    const file = join(dir, 'config');
    await writeFile(file, kubeconfig({ token: 'static-token-1' }));
    const got = await kubeCredential(env(file), dir, dir);
    expect(got).to.deep.equal({ token: 'static-token-1', source: `the kube context "dev" (${file})` });
  });

  it('runs an exec credential plugin and takes its token', async () => {
    const plugin = join(dir, 'plugin.sh');
    await writeFile(plugin, `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token-'"$1"'"}}'\n`);
    await chmod(plugin, 0o755);
    const file = join(dir, 'config');
    await writeFile(file, kubeconfig({ exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, args: ['42'], interactiveMode: 'Never' } }));
    expect((await kubeCredential(env(file), dir, dir)).token).to.equal('exec-token-42');
  });

  it('merges KUBECONFIG as kubectl does: the first file that names a current context wins', async () => {
    const first = join(dir, 'a');
    const second = join(dir, 'b');
    await writeFile(first, JSON.stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 'dev' }));
    await writeFile(second, kubeconfig({ token: 'from-second' }));
    expect((await kubeCredential({ KUBECONFIG: `${first}:${second}` }, dir, dir)).token).to.equal('from-second');
  });

  it('refuses a context without a bearer token, and no kubeconfig, saying what to do', async () => {
    const file = join(dir, 'config');
    await writeFile(file, kubeconfig({ 'client-certificate-data': Buffer.from('not a cert').toString('base64'), 'client-key-data': Buffer.from('k').toString('base64') }));
    let error: any;
    await kubeCredential(env(file), dir, dir).catch((err) => (error = err));
    expect(error).to.be.instanceOf(KubeCredentialError);
    expect(error.message).to.contain('has no bearer token').and.to.contain('a client certificate');
    expect(error.exitCode).to.equal(3);
    error = undefined;
    await kubeCredential(env(join(dir, 'missing')), dir, dir).catch((err) => (error = err));
    expect(error.message).to.contain('no kubeconfig to take a Kubernetes token from');
  });
});
