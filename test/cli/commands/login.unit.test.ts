import { expect } from 'chai';
import { namespaceLine } from '../../../cli/src/commands/login.ts';

// The line `fnhost login` adds against a cluster-mode gateway: which namespace
// later commands use, from where, and whether the login keeps it.
describe('cli login: the namespace line (cluster mode)', () => {
  it('says where the namespace comes from and whether it is saved', () => {
    expect(namespaceLine({ namespace: 'team-a', source: { kind: 'flag' } }, 'default')).to.equal('Namespace: team-a (from --namespace; saved with the login)');
    expect(namespaceLine({ namespace: 'team-a', source: { kind: 'env' } }, 'default')).to.equal('Namespace: team-a (from FNHOST_NAMESPACE; saved with the login)');
    expect(namespaceLine({ namespace: 'team-a', source: { kind: 'kube-context', context: 'dev', file: '/k' } }, 'default')).to.equal(
      'Namespace: team-a (from the kube context "dev" (/k); not saved: each command reads the current kube context)',
    );
    expect(namespaceLine({ namespace: undefined, source: { kind: 'gateway-default', mode: 'cluster' } }, 'fnhost-apps')).to.equal(
      "Namespace: fnhost-apps (the gateway's default; pass --namespace to save another)",
    );
    expect(namespaceLine({ namespace: undefined, source: { kind: 'gateway-default', mode: 'cluster', context: 'bare' } }, undefined)).to.equal(
      `Namespace: default (the gateway's default (the kube context "bare" sets no namespace); pass --namespace to save another)`,
    );
  });
});
