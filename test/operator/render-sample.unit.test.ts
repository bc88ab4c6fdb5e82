import { expect } from 'chai';
import { renderSample } from '../../operator/src/render-sample.ts';

// What charts/scan.sh hands the policy scanner for the operator's side: every
// kind the operator builds, so that a builder the scan never sees cannot slip in.
// (Its command line runs in every make chart-scan.)

describe('operator/src/render-sample.ts (the scanner input for the operator objects)', () => {
  it('renders every kind the operator builds, a CronJob included, with the given settings', () => {
    const objects = renderSample({ FNHOST_RUNTIME_IMAGE: 'registry.example/fnhost/runtime:1', FNHOST_CPU_LIMIT: '500m' });
    expect(objects.map((o) => o.kind).sort()).to.deep.equal(['ConfigMap', 'ConfigMap', 'CronJob', 'Deployment', 'Deployment', 'Secret', 'Secret', 'Service', 'Service']);
    const deployment = objects.find((o) => o.kind === 'Deployment') as any;
    expect(deployment.spec.template.spec.containers[0].image).to.equal('registry.example/fnhost/runtime:1');
    expect(deployment.spec.template.spec.containers[0].resources.limits.cpu).to.equal('500m');
  });
});
