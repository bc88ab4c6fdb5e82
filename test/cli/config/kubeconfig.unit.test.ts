import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MAX_KUBECONFIG_BYTES,
  currentKubeContext,
  kubeconfigPaths,
  loadYamlParser,
  readKubeconfigFiles,
  type KubeconfigFile,
  type YamlParser,
} from '../../../cli/src/config/kubeconfig.ts';
import { EXIT_FAILURE, LocalIoError } from '../../../cli/src/errors.ts';
import { kubeconfigText } from '../helpers/kubeconfig.ts';

// Which kubeconfig files, read how, and the current context of several merged
// the way kubectl merges them; parsed by the real YAML parser (js-yaml), with
// the shape of the fields the CLI reads checked.

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
    let parse: YamlParser;
    before(async () => {
      parse = await loadYamlParser();
    });
    const current = (...files: KubeconfigFile[]) => currentKubeContext(files, parse);
    /** The message of the error for one file with this text. */
    const invalid = (text: string) => thrown(() => current(file('/k/bad', text))).message;

    it('gives the current context, its namespace and the file that defines it', () => {
      const kube = current(file('/k/config', kubeconfigText({ current: 'dev', contexts: [{ name: 'prod' }, { name: 'dev', namespace: 'team-a' }] })));
      expect(kube).to.deep.equal({ context: 'dev', namespace: 'team-a', file: '/k/config', currentContextFile: '/k/config' });
    });

    it('a context without a namespace has none; no current-context is no context', () => {
      expect(current(file('/k', kubeconfigText({ current: 'dev', contexts: [{ name: 'dev' }] })))).to.deep.include({ context: 'dev', namespace: undefined });
      expect(current(file('/k', 'contexts:\n- name: dev\ncurrent-context: dev\n')), 'no context body at all').to.deep.include({ context: 'dev', namespace: undefined });
      expect(current(file('/k', 'contexts:\n- name: dev\n  context: { namespace: "" }\ncurrent-context: dev\n'))).to.deep.include({ namespace: undefined });
      expect(current(file('/k', kubeconfigText({ contexts: [{ name: 'dev', namespace: 'team-a' }] })))).to.equal(undefined);
      expect(current(file('/k', 'current-context: ""\ncontexts: []\n'))).to.equal(undefined);
      expect(current()).to.equal(undefined);
    });

    it("merges like kubectl: the first file's current-context wins, the first definition of a context name wins", () => {
      const first = file('/k/first', kubeconfigText({ current: 'dev', contexts: [{ name: 'dev', namespace: 'team-a' }] }));
      const second = file('/k/second', kubeconfigText({ current: 'prod', contexts: [{ name: 'dev', namespace: 'team-b' }, { name: 'prod', namespace: 'team-p' }] }));
      expect(current(first, second)).to.deep.equal({ context: 'dev', namespace: 'team-a', file: '/k/first', currentContextFile: '/k/first' });
      expect(current(second, first)).to.deep.include({ context: 'prod', namespace: 'team-p', file: '/k/second' });
      // current-context from the first file that sets one; the context defined in a later file.
      const onlyCurrent = file('/k/current', 'current-context: prod\n');
      expect(current(onlyCurrent, first, second)).to.deep.equal({ context: 'prod', namespace: 'team-p', file: '/k/second', currentContextFile: '/k/current' });
      const noCurrent = file('/k/none', kubeconfigText({ contexts: [{ name: 'other', namespace: 'x' }] }));
      expect(current(noCurrent, second)).to.deep.include({ context: 'prod', currentContextFile: '/k/second' });
    });

    it('keeps a name or namespace YAML reads as a number as its text (then checked as a name by the caller)', () => {
      const text = 'contexts:\n- name: 2024\n  context: { cluster: c1, namespace: 7 }\ncurrent-context: 2024\n';
      expect(current(file('/k', text))).to.deep.include({ context: '2024', namespace: '7' });
    });

    it('reads anchors and merge keys, as kubectl does', () => {
      const text = ['base: &base { cluster: c1, namespace: team-m }', 'contexts:', '- name: dev', '  context:', '    <<: *base', '    user: u1', 'current-context: dev'].join('\n');
      expect(current(file('/k', text))).to.deep.include({ context: 'dev', namespace: 'team-m' });
    });

    it('takes an empty file (blank, comments only, null, an empty document) as an empty config', () => {
      const empties = ['', '  \n', '# nothing here yet\n', '~\n', '---\n'].map((text, i) => file(`/k/empty${i}`, text));
      expect(current(...empties)).to.equal(undefined);
      expect(current(...empties, file('/k/config', kubeconfigText({ current: 'dev', contexts: [{ name: 'dev', namespace: 'team-a' }] })))).to.deep.include({ context: 'dev', file: '/k/config' });
    });

    it('reads only the fields it needs: clusters, users and a context without a cluster do not matter', () => {
      const incomplete = [
        'clusters:',
        '- name: no-server',
        'users: 42', // kubectl would refuse this; the CLI does not read users
        'contexts:',
        '- name: dev',
        '  context: { namespace: team-a }', // no cluster, no user
        'current-context: dev',
      ].join('\n');
      expect(current(file('/k/config', incomplete))).to.deep.include({ context: 'dev', namespace: 'team-a', file: '/k/config' });
    });

    it('names the file that is not YAML, with the line and column, and the hint to name the namespace', () => {
      const bad = thrown(() => current(file('/k/ok', 'current-context: dev\n'), file('/k/bad', 'contexts: [\n  - name: dev\n')));
      expect(bad).to.be.instanceOf(LocalIoError);
      expect((bad as LocalIoError).exitCode).to.equal(EXIT_FAILURE);
      expect(bad.message).to.match(/^the kubeconfig file \/k\/bad is not valid: .+ \(line \d+, column \d+\)$/);
      expect((bad as LocalIoError).hint).to.equal('fix the file, or name the namespace with --namespace (or FNHOST_NAMESPACE, or fnhost login --namespace) so the kube context is not read');
      expect(invalid('current-context: a\ncurrent-context: b\n')).to.equal('the kubeconfig file /k/bad is not valid: duplicated mapping key (line 2, column 1)');
      expect(invalid('a: 1\n---\nb: 2\n')).to.equal('the kubeconfig file /k/bad is not valid: it holds 2 YAML documents; a kubeconfig file is one');
    });

    it('names the field of the wrong shape', () => {
      const cases: Array<[string, string]> = [
        ['- a\n- b\n', 'its top level is a list, not a mapping'],
        ['just-a-token-by-mistake\n', 'its top level is text, not a mapping'], // the text itself is never shown
        ['current-context: [dev]\n', 'current-context is a list, not a string'],
        ['contexts: { dev: { namespace: x } }\n', 'contexts is a mapping, not a list'],
        ['contexts: dev\n', 'contexts is text, not a list'],
        ['contexts: 5\n', 'contexts is a number, not a list'],
        ['contexts:\n- name: ok\n- dev\n', 'contexts[1] is text, not a mapping with a name and a context'],
        ['contexts:\n- \n', 'contexts[0] is empty, not a mapping with a name and a context'],
        ['contexts:\n- context: { namespace: x }\n', 'contexts[0] has no name'],
        ['contexts:\n- name: ""\n', 'contexts[0] has no name'],
        ['contexts:\n- name: { first: dev }\n', 'contexts[0].name is a mapping, not a string'],
        ['contexts:\n- name: dev\n  context: [ns]\n', 'contexts[0].context is a list, not a mapping'],
        ['contexts:\n- name: dev\n  context: true\n', 'contexts[0].context is a boolean, not a mapping'],
        ['contexts:\n- name: dev\n  context: { namespace: [a, b] }\n', 'contexts[0].context.namespace is a list, not a string'],
        ['contexts:\n- name: dev\n- name: prod\n- name: dev\n', 'contexts[2].name "dev" is also the name of contexts[0]'],
      ];
      for (const [text, why] of cases) {
        const err = thrown(() => current(file('/k/bad', text)));
        expect(err, text).to.be.instanceOf(LocalIoError);
        expect(err.message, text).to.equal(`the kubeconfig file /k/bad is not valid: ${why}`);
        expect((err as LocalIoError).hint, text).to.contain('--namespace');
      }
    });

    it('checks every context of a file, not only the current one (as kubectl refuses the whole file)', () => {
      const text = kubeconfigText({ current: 'dev', contexts: [{ name: 'dev', namespace: 'team-a' }] }) + 'contexts: []\n';
      expect(invalid(text)).to.match(/^the kubeconfig file \/k\/bad is not valid: duplicated mapping key \(line \d+, column 1\)$/);
      expect(invalid('current-context: dev\ncontexts:\n- name: dev\n- name: other\n  context: { namespace: { a: 1 } }\n')).to.equal(
        'the kubeconfig file /k/bad is not valid: contexts[1].context.namespace is a mapping, not a string',
      );
    });

    it('keys named like Object.prototype members are data, not inherited fields', () => {
      expect(invalid('contexts:\n- __proto__: { name: dev }\n  context: { namespace: x }\n')).to.equal('the kubeconfig file /k/bad is not valid: contexts[0] has no name');
      expect(current(file('/k', 'contexts:\n- name: toString\ncurrent-context: toString\n'))).to.deep.include({ context: 'toString', namespace: undefined });
      expect(current(file('/k', 'contexts:\n- name: dev\n  context: { cluster: c1 }\ncurrent-context: dev\n'))).to.deep.include({ namespace: undefined });
    });

    it('names a file that cannot be read', () => {
      expect(thrown(() => current({ path: '/k/locked', error: 'EACCES' })).message).to.equal('cannot read the kubeconfig file /k/locked (EACCES)');
    });

    it('names a current-context that no file defines', () => {
      const err = thrown(() => current(file('/k/a', 'current-context: gone\n'), file('/k/b', kubeconfigText({ contexts: [{ name: 'dev' }] }))));
      expect(err.message).to.equal('the current kube context "gone" (current-context in /k/a) is not defined in /k/a, /k/b');
      expect((err as LocalIoError).hint).to.match(/^pick one with kubectl config use-context, or name the namespace with --namespace/);
    });
  });
});
