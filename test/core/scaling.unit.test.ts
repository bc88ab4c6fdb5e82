import { expect } from 'chai';
import { ValidationError } from '@fnhost/core';
import { AutoscaledReplicasError, applyScalingChange, isCpuQuantity, millicores, parseScalingChange, type FunctionScalingSettings } from '@fnhost/core/scaling.ts';

const fixed: FunctionScalingSettings = { replicas: 1, autoscale: null, scale_to_zero: null, cpu: { request: null, limit: null } };

describe('core: scaling settings (cluster mode)', () => {
  it('CPU quantities: millicores or cores with up to three decimals', () => {
    expect(millicores('250m')).to.equal(250);
    expect(millicores('0.5')).to.equal(500);
    expect(millicores('2')).to.equal(2000);
    for (const ok of ['1m', '250m', '0.001', '1.5', '16']) expect(isCpuQuantity(ok), ok).to.equal(true);
    for (const bad of ['0', '0m', '-1', '1.2345', '1Gi', 'lots', '1e3', '']) expect(isCpuQuantity(bad), bad).to.equal(false);
  });

  it('parses a change, filling defaults and naming the bad value', () => {
    expect(parseScalingChange({ autoscale: { max_replicas: 5, target_concurrency: 2 } })).to.deep.equal({ autoscale: { min_replicas: 1, max_replicas: 5, target_concurrency: 2 } });
    expect(parseScalingChange({ scale_to_zero: {} })).to.deep.equal({ scale_to_zero: { idle_seconds: 300 } });
    expect(parseScalingChange({ autoscale: null, scale_to_zero: null, cpu: null, replicas: 3 })).to.deep.equal({ replicas: 3, autoscale: null, scale_to_zero: null, cpu: { request: null, limit: null } });
    const bad = (body: unknown) => {
      try {
        parseScalingChange(body);
      } catch (err) {
        expect(err).to.be.instanceOf(ValidationError);
        return (err as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(body)}`);
    };
    expect(bad({ replicas: 101 })).to.equal('replicas must be a whole number from 0 to 100, got 101');
    expect(bad({ autoscale: { min_replicas: 4, max_replicas: 2 } })).to.contain('autoscale.min_replicas (4) is above autoscale.max_replicas (2)');
    expect(bad({ autoscale: { target_concurrency: 0 } })).to.contain('autoscale.target_concurrency');
    expect(bad({ scale_to_zero: { idle_seconds: 5 } })).to.contain('from 30 to 86400');
    expect(bad({ cpu: { limit: '1Gi' } })).to.equal('cpu.limit must be a CPU quantity such as 250m or 0.5, got "1Gi"');
    expect(bad({ cpu: { request: '2', limit: '1' } })).to.contain('cpu.request (2) is above cpu.limit (1)');
    expect(bad({ replicass: 1 })).to.contain('unknown field "replicass"');
    expect(bad([])).to.contain('must be an object');
  });

  it('applies a change as a whole: scale to zero lowers an autoscale floor it was given alone, and refuses one given with it', () => {
    const auto = applyScalingChange(fixed, { autoscale: { min_replicas: 2, max_replicas: 6, target_concurrency: 4 } });
    expect(applyScalingChange(auto, { scale_to_zero: { idle_seconds: 60 } }).autoscale).to.deep.equal({ min_replicas: 0, max_replicas: 6, target_concurrency: 4 });
    expect(() => applyScalingChange(fixed, { autoscale: { min_replicas: 1, max_replicas: 3, target_concurrency: 1 }, scale_to_zero: { idle_seconds: 60 } })).to.throw(ValidationError, /min_replicas 0/);
    expect(applyScalingChange(fixed, { cpu: { request: '100m', limit: null } }).cpu).to.deep.equal({ request: '100m', limit: null });
  });

  it('refuses a replica count while autoscaling sets the pods (409 naming spec.scaling), takes it with autoscaling turned off', () => {
    const auto = applyScalingChange(fixed, { autoscale: { min_replicas: 1, max_replicas: 5, target_concurrency: 10 } });
    let caught: unknown;
    try {
      applyScalingChange(auto, { replicas: 2 });
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(AutoscaledReplicasError);
    expect((caught as AutoscaledReplicasError).status).to.equal(409);
    expect((caught as Error).message).to.contain('replicas 2 would be ignored: the function autoscales (spec.scaling, 1-5 pods)');
    expect(() => applyScalingChange(fixed, { replicas: 2, autoscale: { min_replicas: 1, max_replicas: 5, target_concurrency: 10 } })).to.throw(AutoscaledReplicasError);
    expect(applyScalingChange(auto, { replicas: 2, autoscale: null })).to.include({ replicas: 2, autoscale: null });
    expect(applyScalingChange(fixed, { replicas: 3 }).replicas).to.equal(3);
  });
});
