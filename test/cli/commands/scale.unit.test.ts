import { expect } from 'chai';
import { scalingBody } from '../../../cli/src/commands/scale.ts';
import { scalingText } from '../../../cli/src/format/function.ts';
import type { CommandContext } from '../../../cli/src/commands/spec.ts';
import type { FunctionScalingSettings } from '@fnhost/core/scaling.ts';

const ctx = (options: Record<string, string>) => ({ options, args: ['hello'] }) as unknown as CommandContext;
const fixed: FunctionScalingSettings = { replicas: 1, autoscale: null, scale_to_zero: null, cpu: { request: null, limit: null } };
const auto: FunctionScalingSettings = { ...fixed, autoscale: { min_replicas: 2, max_replicas: 8, target_concurrency: 4 } };

describe('cli function:scale: flags to the scaling body', () => {
  it('--min/--max/--target start autoscaling with defaults, or adjust the current one', () => {
    expect(scalingBody(ctx({ target: '2' }), fixed)).to.deep.equal({ autoscale: { min_replicas: 1, max_replicas: 10, target_concurrency: 2 } });
    expect(scalingBody(ctx({ max: '12' }), auto)).to.deep.equal({ autoscale: { min_replicas: 2, max_replicas: 12, target_concurrency: 4 } });
    expect(scalingBody(ctx({ min: '20' }), auto)).to.deep.equal({ autoscale: { min_replicas: 20, max_replicas: 20, target_concurrency: 4 } });
    expect(scalingBody(ctx({ autoscale: 'off', replicas: '3' }), auto)).to.deep.equal({ replicas: 3, autoscale: null });
  });

  it('scale to zero, CPU (default clears one, keeps the other)', () => {
    expect(scalingBody(ctx({ 'scale-to-zero': 'on' }), fixed)).to.deep.equal({ scale_to_zero: {} });
    expect(scalingBody(ctx({ 'scale-to-zero': '120' }), fixed)).to.deep.equal({ scale_to_zero: { idle_seconds: 120 } });
    expect(scalingBody(ctx({ 'scale-to-zero': 'off' }), fixed)).to.deep.equal({ scale_to_zero: null });
    expect(scalingBody(ctx({ 'cpu-request': '250m' }), { ...fixed, cpu: { request: null, limit: '1' } })).to.deep.equal({ cpu: { request: '250m', limit: '1' } });
    expect(scalingBody(ctx({ 'cpu-limit': 'default' }), { ...fixed, cpu: { request: '100m', limit: '1' } })).to.deep.equal({ cpu: { request: '100m', limit: null } });
  });

  it('refuses bad flags naming them, and no flag at all', () => {
    expect(() => scalingBody(ctx({}), fixed)).to.throw(/needs at least one of --replicas/);
    expect(() => scalingBody(ctx({ replicas: '-1' }), fixed)).to.throw('--replicas must be a whole number from 0 to 100, got "-1"');
    expect(() => scalingBody(ctx({ 'scale-to-zero': '5' }), fixed)).to.throw(/--scale-to-zero takes on, off or the idle seconds/);
    expect(() => scalingBody(ctx({ autoscale: 'off', min: '1' }), fixed)).to.throw(/takes no --min/);
    expect(() => scalingBody(ctx({ 'cpu-limit': '1Gi' }), fixed)).to.throw(/cpu.limit must be a CPU quantity/);
  });

  it('refuses --replicas on an autoscaled function (it would be ignored), unless autoscaling is turned off with it', () => {
    expect(() => scalingBody(ctx({ replicas: '2' }), auto)).to.throw(/--replicas 2 would be ignored: hello autoscales \(spec.scaling\)/);
    expect(() => scalingBody(ctx({ replicas: '2', autoscale: 'on' }), fixed)).to.throw(/would be ignored/);
    expect(scalingBody(ctx({ replicas: '2' }), fixed)).to.deep.equal({ replicas: 2 });
    expect(scalingBody(ctx({ replicas: '2', autoscale: 'off' }), auto)).to.deep.equal({ replicas: 2, autoscale: null });
  });

  it('function:get shows it in one line', () => {
    expect(scalingText(fixed)).to.equal('1 pod');
    expect(scalingText({ ...auto, autoscale: { ...auto.autoscale!, min_replicas: 0 }, cpu: { request: '250m', limit: null } })).to.equal(
      'autoscale 0-8 pods at 4 calls in flight each, to zero when idle, cpu 250m/default (request/limit)',
    );
  });
});
