import { expect } from 'chai';
import { KubeConfig } from '@kubernetes/client-node';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MAX_KUBECONFIG_BYTES,
  currentKubeContext,
  kubeconfigPaths,
  readKubeconfigFiles,
  type KubeconfigFile,
} from '../../../cli/src/config/kubeconfig.ts';
import { EXIT_FAILURE, LocalIoError } from '../../../cli/src/errors.ts';
import { kubeconfigText } from '../helpers/kubeconfig.ts';

// Which kubeconfig files, read how, and the current context of several merged
// the way kubectl merges them; parsed by client-node's real KubeConfig.

function file(path: string, text: string): KubeconfigFile {
  return { path, text };
}

function thrown(run: () => unknown): Error {
  try {
    run();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error');
}

describe('cli config: kubeconfig (the current kube context)', () => {
  describe('kubeconfigPaths', () => {
    it('is ~/.kube/config when KUBECONFIG is unset or empty', () => {
      expect(kubeconfigPaths({}, '/home/ada', '/work')).to.deep.equal(['/home/ada/.kube/config']);
      expect(kubeconfigPaths({ KUBECONFIG: '' }, '/home/ada', '/work')).to.deep.equal(['/home/ada/.kube/config']);
    });

    it("splits KUBECONFIG on ':', resolves relative entries against the working directory, drops empty entries and repeats", () => {
      expect(kubeconfigPaths({ KUBECONFIG: 'a.yaml::/etc/kube/b.yaml:./a.yaml:' }, '/home/ada', '/work')).to.deep.equal(['/work/a.yaml', '/etc/kube/b.yaml']);
    });
  });

  describe('readKubeconfigFiles', () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'fnhost-cli-kube-'));
    });
    afterEach(() => rm(dir, { recursive: true, force: true }));

    it('leaves out missing files, reads the others in order, and says why one cannot be read', async () => {
      await writeFile(join(dir, 'one'), 'current-context: x\n');
      await mkdir(join(dir, 'adir'));
      await writeFile(join(dir, 'big'), Buffer.alloc(MAX_KUBECONFIG_BYTES + 1, 0x20));
      const files = await readKubeconfigFiles([join(dir, 'missing'), join(dir, 'one'), join(dir, 'adir'), join(dir, 'one', 'below-a-file'), join(dir, 'big')]);
      expect(files).to.deep.equal([
        { path: join(dir, 'one'), text: 'current-context: x\n' },
        { path: join(dir, 'adir'), error: 'not a regular file' },
        { path: join(dir, 'big'), error: 'larger than 4 MiB' },
      ]);
      expect(await readKubeconfigFiles([join(dir, 'missing')])).to.deep.equal([]);
    });
  });

  describe('currentKubeContext', () => {
    it('gives the current context, its namespace and the file that defines it', () => {
      const kube = currentKubeContext([file('/k/config', kubeconfigText({ current: 'dev', contexts: [{ name: 'prod' }, { name: 'dev', namespace: 'team-a' }] }))], KubeConfig);
      expect(kube).to.deep.equal({ context: 'dev', namespace: 'team-a', file: '/k/config', currentContextFile: '/k/config' });
    });

    it('a context without a namespace has none; no current-context is no context', () => {
      expect(currentKubeContext([file('/k', kubeconfigText({ current: 'dev', contexts: [{ name: 'dev' }] }))], KubeConfig)).to.deep.include({ context: 'dev', namespace: undefined });
      expect(currentKubeContext([file('/k', kubeconfigText({ contexts: [{ name: 'dev', namespace: 'team-a' }] }))], KubeConfig)).to.equal(undefined);
      expect(currentKubeContext([], KubeConfig)).to.equal(undefined);
    });

    it("merges like kubectl: the first file's current-context wins, the first definition of a context name wins", () => {
      const first = file('/k/first', kubeconfigText({ current: 'dev', contexts: [{ name: 'dev', namespace: 'team-a' }] }));
      const second = file('/k/second', kubeconfigText({ current: 'prod', contexts: [{ name: 'dev', namespace: 'team-b' }, { name: 'prod', namespace: 'team-p' }] }));
      expect(currentKubeContext([first, second], KubeConfig)).to.deep.equal({ context: 'dev', namespace: 'team-a', file: '/k/first', currentContextFile: '/k/first' });
      expect(currentKubeContext([second, first], KubeConfig)).to.deep.include({ context: 'prod', namespace: 'team-p', file: '/k/second' });
      // current-context from the first file that sets one; the context defined in a later file.
      const onlyCurrent = file('/k/current', 'current-context: prod\n');
      expect(currentKubeContext([onlyCurrent, first, second], KubeConfig)).to.deep.equal({ context: 'prod', namespace: 'team-p', file: '/k/second', currentContextFile: '/k/current' });
      const noCurrent = file('/k/none', kubeconfigText({ contexts: [{ name: 'other', namespace: 'x' }] }));
      expect(currentKubeContext([noCurrent, second], KubeConfig)).to.deep.include({ context: 'prod', currentContextFile: '/k/second' });
    });

    it('keeps a namespace YAML reads as a number as text (then checked as a name by the caller)', () => {
      const text = 'contexts:\n- name: dev\n  context: { cluster: c1, namespace: 7 }\ncurrent-context: dev\n';
      expect(currentKubeContext([file('/k', text)], KubeConfig)).to.deep.include({ namespace: '7' });
    });

    it('takes an empty file as an empty config, and skips incomplete entries other than the current context', () => {
      const incomplete = [
        'clusters:',
        '- name: no-server', // client-node would refuse the whole file for this one by default
        'users:',
        '- name: no-user-body',
        'contexts:',
        '- name: no-cluster',
        '  context: { namespace: x }',
        '- name: dev',
        '  context: { cluster: c1, namespace: team-a }',
        'current-context: dev',
      ].join('\n');
      const kube = currentKubeContext([file('/k/empty', '  \n'), file('/k/config', incomplete)], KubeConfig);
      expect(kube).to.deep.include({ context: 'dev', namespace: 'team-a', file: '/k/config' });
    });

    it('names the file that is not YAML, or not a mapping, or cannot be read', () => {
      const bad = thrown(() => currentKubeContext([file('/k/ok', 'current-context: dev\n'), file('/k/bad', 'contexts: [\n  - name: dev\n')], KubeConfig));
      expect(bad).to.be.instanceOf(LocalIoError);
      expect((bad as LocalIoError).exitCode).to.equal(EXIT_FAILURE);
      expect(bad.message).to.match(/^the kubeconfig file \/k\/bad is not valid: .+ \(line \d+, column \d+\)$/);
      expect((bad as LocalIoError).hint).to.contain('--namespace');
      expect(thrown(() => currentKubeContext([file('/k/null', '~\n')], KubeConfig)).message).to.equal('the kubeconfig file /k/null is not valid: it is not a YAML mapping');
      expect(thrown(() => currentKubeContext([{ path: '/k/locked', error: 'EACCES' }], KubeConfig)).message).to.equal('cannot read the kubeconfig file /k/locked (EACCES)');
    });

    it('names a current-context that no file defines', () => {
      const err = thrown(() => currentKubeContext([file('/k/a', 'current-context: gone\n'), file('/k/b', kubeconfigText({ contexts: [{ name: 'dev' }] }))], KubeConfig));
      expect(err.message).to.equal('the current kube context "gone" (current-context in /k/a) is not defined in /k/a, /k/b (a context needs a name and a cluster)');
      expect((err as LocalIoError).hint).to.match(/^pick one with kubectl config use-context, or name the namespace with --namespace/);
    });
  });
});
