import { expect } from 'chai';
import {
  matchesSelector,
  namespaceVerdict,
  needsLabels,
  parseFunctionNamespaces,
  parseLabelSelector,
} from '@fnhost/core/function-namespaces.ts';

describe('core: namespaces where functions may live', () => {
  it('parses label selectors as Kubernetes writes them', () => {
    expect(parseLabelSelector('team=a, tier==web,env!=prod,fnhost,!legacy,zone in (x, y),size notin (big)', 'S')).to.deep.equal([
      { key: 'team', op: 'in', values: ['a'] },
      { key: 'tier', op: 'in', values: ['web'] },
      { key: 'env', op: 'notin', values: ['prod'] },
      { key: 'fnhost', op: 'exists' },
      { key: 'legacy', op: 'doesnotexist' },
      { key: 'zone', op: 'in', values: ['x', 'y'] },
      { key: 'size', op: 'notin', values: ['big'] },
    ]);
    expect(parseLabelSelector('fnhost.dev/functions=allowed', 'S')).to.deep.equal([{ key: 'fnhost.dev/functions', op: 'in', values: ['allowed'] }]);
    expect(() => parseLabelSelector('team=a,,b', 'SEL')).to.throw(/SEL: .* empty requirement/);
    expect(() => parseLabelSelector('te am=a', 'SEL')).to.throw(/SEL: "te am=a" is not a label requirement/);
    expect(() => parseLabelSelector('team=a b', 'SEL')).to.throw(/SEL/);
    expect(() => parseLabelSelector('team=' + 'v'.repeat(64), 'SEL')).to.throw(/invalid label value/);
  });

  it('matches selectors against labels', () => {
    const s = parseLabelSelector('team in (a,b),!legacy,env!=prod', 'S');
    expect(matchesSelector(s, { team: 'a' })).to.equal(true);
    expect(matchesSelector(s, { team: 'b', env: 'dev' })).to.equal(true);
    expect(matchesSelector(s, { team: 'c' })).to.equal(false);
    expect(matchesSelector(s, { team: 'a', legacy: '' })).to.equal(false);
    expect(matchesSelector(s, { team: 'a', env: 'prod' })).to.equal(false);
    expect(matchesSelector(s, {})).to.equal(false);
  });

  it('never allows kube-system nor the platform namespace, even when named', () => {
    const rule = parseFunctionNamespaces({ names: 'kube-system,fnhost-system,team-a', platformNamespace: 'fnhost-system' });
    for (const ns of ['kube-system', 'fnhost-system']) {
      const verdict = namespaceVerdict(rule, ns);
      expect(verdict.allowed).to.equal(false);
      expect(verdict.allowed === false && verdict.reason).to.contain(`namespace "${ns}" may never hold functions`);
    }
    expect(namespaceVerdict(rule, 'team-a')).to.deep.equal({ allowed: true });
  });

  it('allows every other namespace when neither setting is given', () => {
    const rule = parseFunctionNamespaces({ platformNamespace: 'fnhost-system' });
    expect(namespaceVerdict(rule, 'anything')).to.deep.equal({ allowed: true });
    expect(namespaceVerdict(rule, 'kube-system').allowed).to.equal(false);
    expect(needsLabels(rule, 'anything')).to.equal(false);
  });

  it('allows a listed namespace or one whose labels match, and names both settings when it refuses', () => {
    const rule = parseFunctionNamespaces({ names: 'team-a, team-b', selector: 'fnhost.dev/functions=allowed' });
    expect(needsLabels(rule, 'team-a')).to.equal(false);
    expect(needsLabels(rule, 'team-c')).to.equal(true);
    expect(namespaceVerdict(rule, 'team-b')).to.deep.equal({ allowed: true });
    expect(namespaceVerdict(rule, 'team-c', { 'fnhost.dev/functions': 'allowed' })).to.deep.equal({ allowed: true });
    const refused = namespaceVerdict(rule, 'team-c', { other: 'x' });
    expect(refused.allowed).to.equal(false);
    expect(refused.allowed === false && refused.reason).to.equal(
      'namespace "team-c" is not one where functions may live: functions.namespaces (FNHOST_FUNCTION_NAMESPACES) is [team-a, team-b] and functions.namespaceSelector (FNHOST_FUNCTION_NAMESPACE_SELECTOR) is "fnhost.dev/functions=allowed"',
    );
    const missing = namespaceVerdict(rule, 'ghost', undefined);
    expect(missing.allowed === false && missing.reason).to.contain('(it does not exist, so it has no labels)');
  });

  it('refuses settings that are not namespace names, naming the variable', () => {
    expect(() => parseFunctionNamespaces({ names: 'team-a,Team_B' })).to.throw(/FNHOST_FUNCTION_NAMESPACES: "Team_B" is not a namespace name/);
    expect(() => parseFunctionNamespaces({ selector: 'a b c' })).to.throw(/FNHOST_FUNCTION_NAMESPACE_SELECTOR/);
  });
});
