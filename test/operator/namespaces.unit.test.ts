import { expect } from 'chai';
import { parseFunctionNamespaces } from '@fnhost/core/function-namespaces.ts';
import { namespaceProblem } from '../../operator/src/namespaces.ts';
import { loadSettings } from '../../operator/src/settings.ts';

describe('operator: Functions only in namespaces where functions may live', () => {
  it('refuses kube-system and the platform namespace, and unlisted ones, reading labels only for the selector', async () => {
    const reads: string[] = [];
    const labelsOf = async (ns: string): Promise<Record<string, string>> => {
      reads.push(ns);
      return ns === 'labelled' ? { 'fnhost.dev/functions': 'allowed' } : {};
    };
    const rule = parseFunctionNamespaces({ names: 'team-a', selector: 'fnhost.dev/functions=allowed', platformNamespace: 'fnhost-system' });
    expect(await namespaceProblem(rule, 'team-a', labelsOf)).to.equal(null);
    expect(await namespaceProblem(rule, 'labelled', labelsOf)).to.equal(null);
    const system = await namespaceProblem(rule, 'kube-system', labelsOf);
    expect(system).to.deep.include({ reason: 'NamespaceNotAllowed' });
    expect(system!.message).to.contain('namespace "kube-system" may never hold functions').and.to.contain('nothing is run for this Function');
    expect((await namespaceProblem(rule, 'fnhost-system', labelsOf))!.reason).to.equal('NamespaceNotAllowed');
    expect((await namespaceProblem(rule, 'other', labelsOf))!.message).to.contain('functions.namespaceSelector (FNHOST_FUNCTION_NAMESPACE_SELECTOR) is "fnhost.dev/functions=allowed"');
    expect(reads).to.deep.equal(['labelled', 'other']);
  });

  it('reads the rule from its settings, the lease namespace being the platform\'s', () => {
    const settings = loadSettings({ FNHOST_TOKEN_KEY: 'k'.repeat(32), FNHOST_FUNCTION_NAMESPACES: 'team-a,team-b', FNHOST_LEASE_NAMESPACE: 'fnhost-system' }, { namespace: 'fnhost-system' });
    expect(settings.functionNamespaces.names).to.deep.equal(['team-a', 'team-b']);
    expect(settings.functionNamespaces.never).to.deep.equal(['kube-system', 'fnhost-system']);
    expect(() => loadSettings({ FNHOST_TOKEN_KEY: 'k'.repeat(32), FNHOST_FUNCTION_NAMESPACE_SELECTOR: 'a b c' })).to.throw(/FNHOST_FUNCTION_NAMESPACE_SELECTOR/);
  });
});
