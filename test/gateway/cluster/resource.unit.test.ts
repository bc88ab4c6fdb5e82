import { expect } from 'chai';
import type { FunctionRecord } from '@fnhost/core';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import {
  ANNOTATION_UPDATED_AT, derivedFunctionId, functionIdOf, readyOf, recordFromResource, resourceForCreate, rolloutOf, specPatch, updatedAt,
} from '../../../gateway/src/cluster/resource.ts';

function resource(spec: Partial<FunctionResource['spec']> = {}, meta: Partial<FunctionResource['metadata']> = {}): FunctionResource {
  return {
    apiVersion: 'fnhost.dev/v1alpha1',
    kind: 'Function',
    metadata: { name: 'hello', namespace: 'team-a', uid: 'u1', resourceVersion: '10', creationTimestamp: '2026-11-23T10:00:00Z', ...meta },
    spec: { code: 'export default (req, res) => res.json({})', ...spec },
  };
}

describe('cluster mode: Function resource ↔ FunctionRecord', () => {
  it('uses the functionId derived from namespace/name (core/src/function-identity.ts, shared with the operator)', () => {
    expect(functionIdOf(resource())).to.equal(derivedFunctionId('team-a', 'hello'));
  });

  it('uses spec.functionId when set (an imported function keeps its id)', () => {
    const id = '0b7c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3';
    expect(functionIdOf(resource({ functionId: id }))).to.equal(id);
    expect(recordFromResource(resource({ functionId: id }))!.function_id).to.equal(id);
  });

  it('fills the CRD defaults and maps every field', () => {
    const r = recordFromResource(resource())!;
    expect(r).to.deep.include({
      function_id: derivedFunctionId('team-a', 'hello'),
      name: 'hello',
      namespace: 'team-a',
      env: {},
      routes: [],
      timeout_seconds: 30,
      memory_mib: 128,
      active: true,
      retention: { type: 'none' },
      schedule: null,
      created_at: '2026-11-23T10:00:00.000Z',
      updated_at: '2026-11-23T10:00:00.000Z',
    });
    const full = recordFromResource(
      resource(
        {
          routes: ['/users/:id'],
          env: [{ name: 'A', value: '1' }, { name: 'EMPTY' }, { name: 'SECRET', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
          timeoutSeconds: 5,
          memoryMiB: 64,
          active: false,
          schedule: { cron: '* * * * *', suspend: true },
          retention: { type: 'count', count: 7 },
        },
        { annotations: { [ANNOTATION_UPDATED_AT]: '2026-11-23T11:00:00.123Z' } },
      ),
    )!;
    expect(full.env, 'valueFrom entries are resolved only in the pod').to.deep.equal({ A: '1', EMPTY: '' });
    expect(full.routes).to.deep.equal(['/users/:id']);
    expect(full.timeout_seconds).to.equal(5);
    expect(full.memory_mib).to.equal(64);
    expect(full.active).to.equal(false);
    expect(full.schedule).to.deep.equal({ cron: '* * * * *', timezone: 'UTC', enabled: false });
    expect(full.retention).to.deep.equal({ type: 'count', count: 7 });
    expect(full.updated_at).to.equal('2026-11-23T11:00:00.123Z');
  });

  it('treats a Function being deleted (finalizer pending) as gone', () => {
    expect(recordFromResource(resource({}, { deletionTimestamp: '2026-11-23T12:00:00Z' }))).to.equal(null);
  });

  it('builds the create body without an id (derived by both sides) and with the update time', () => {
    const rec = recordFromResource(resource({ env: [{ name: 'A', value: '1' }], schedule: { cron: '0 * * * *', timezone: 'Europe/Paris' }, retention: { type: 'time', days: 3 } }))!;
    const body = resourceForCreate(rec);
    expect(body.metadata).to.deep.equal({ name: 'hello', namespace: 'team-a', annotations: { [ANNOTATION_UPDATED_AT]: rec.updated_at } });
    expect(body.spec).to.not.have.property('functionId');
    expect(body.spec).to.deep.include({ env: [{ name: 'A', value: '1' }], schedule: { cron: '0 * * * *', timezone: 'Europe/Paris', suspend: false }, retention: { type: 'time', days: 3 } });
    expect(recordFromResource({ ...body, metadata: { ...body.metadata, creationTimestamp: '2026-11-23T10:00:00Z' } })).to.deep.equal(rec);
  });

  describe('scaling (pods, autoscaling, scale to zero, CPU)', () => {
    it('reads the spec with the CRD defaults, and patches only what changed (null removes)', () => {
      const res = { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'a', namespace: 'ns', resourceVersion: '1' }, spec: { code: 'x', replicas: 2, scaling: { targetConcurrency: 3 }, cpu: { limit: '500m' } } } as FunctionResource;
      const before = recordFromResource(res)!;
      expect(before.scaling).to.deep.equal({ replicas: 2, autoscale: { min_replicas: 1, max_replicas: 10, target_concurrency: 3 }, scale_to_zero: null, cpu: { request: null, limit: '500m' } });
      const after = { ...before, updated_at: 'later', scaling: { ...before.scaling!, autoscale: null, scale_to_zero: { idle_seconds: 60 }, cpu: { request: null, limit: null } } };
      expect(specPatch(before, after, res)).to.deep.equal({ metadata: { annotations: { [ANNOTATION_UPDATED_AT]: 'later' } }, spec: { scaling: null, scaleToZero: { idleSeconds: 60 }, cpu: null } });
      const more = { ...before, updated_at: 'later', scaling: { ...before.scaling!, autoscale: { min_replicas: 0, max_replicas: 4, target_concurrency: 2 } } };
      expect(specPatch(before, more, res)!.spec).to.deep.equal({ scaling: { minReplicas: 0, maxReplicas: 4, targetConcurrency: 2 } });
    });
  });

  describe('specPatch', () => {
    const current = resource({ env: [{ name: 'A', value: '1' }, { name: 'S', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }], retention: { type: 'count', count: 5 } });
    const before: FunctionRecord = recordFromResource(current)!;

    it('is null when nothing changed', () => {
      expect(specPatch(before, { ...before, updated_at: 'later' }, current)).to.equal(null);
    });

    it('carries only the changed fields, so a concurrent kubectl edit of another field survives', () => {
      const patch = specPatch(before, { ...before, code: 'new', updated_at: '2026-11-23T12:00:00.000Z' }, current)!;
      expect(patch).to.deep.equal({ metadata: { annotations: { [ANNOTATION_UPDATED_AT]: '2026-11-23T12:00:00.000Z' } }, spec: { code: 'new' } });
    });

    it('clears days/count of the old retention type (a merge patch merges objects)', () => {
      const patch = specPatch(before, { ...before, retention: { type: 'time', days: 2 } }, current)!;
      expect(patch.spec).to.deep.equal({ retention: { type: 'time', days: 2, count: null } });
      const none = specPatch(before, { ...before, retention: { type: 'none' } }, current)!;
      expect(none.spec).to.deep.equal({ retention: { type: 'none', days: null, count: null } });
    });

    it('keeps env entries from Secrets when env is replaced, unless the new env names them', () => {
      expect(specPatch(before, { ...before, env: { B: '2' } }, current)!.spec).to.deep.equal({
        env: [{ name: 'B', value: '2' }, { name: 'S', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
      });
      expect(specPatch(before, { ...before, env: { S: 'plain' } }, current)!.spec).to.deep.equal({ env: [{ name: 'S', value: 'plain' }] });
    });

    it('maps schedule enable/disable onto suspend, and a removed schedule onto null', () => {
      const withSchedule = { ...before, schedule: { cron: '*/5 * * * *', timezone: 'UTC', enabled: true } };
      expect(specPatch(before, withSchedule, current)!.spec).to.deep.equal({ schedule: { cron: '*/5 * * * *', timezone: 'UTC', suspend: false } });
      expect(specPatch(withSchedule, { ...withSchedule, schedule: { ...withSchedule.schedule, enabled: false } }, current)!.spec).to.deep.equal({
        schedule: { cron: '*/5 * * * *', timezone: 'UTC', suspend: true },
      });
      expect(specPatch(withSchedule, before, current)!.spec).to.deep.equal({ schedule: null });
    });
  });

  it('reads the Ready condition', () => {
    expect(readyOf(resource())).to.equal(null);
    const r = resource();
    r.status = { conditions: [{ type: 'Ready', status: 'False', reason: 'ImageUnavailable', message: 'no image', lastTransitionTime: '2026-11-23T10:01:00Z' }] };
    expect(readyOf(r)).to.deep.equal({ status: 'False', reason: 'ImageUnavailable', message: 'no image' });
  });
});

describe('cluster mode: updated_at and rollout from the resource', () => {
  const specBy = (manager: string, time: string, subresource?: string) => ({ manager, operation: 'Update', time, ...(subresource ? { subresource } : {}), fieldsV1: subresource ? { 'f:status': {} } : { 'f:spec': { 'f:code': {} } } });

  it('updated_at follows the newest spec change by any writer (kubectl edit too), never status nor metadata-only writes', () => {
    const created = '2026-11-20T10:00:00Z';
    const base = resource({}, { creationTimestamp: created, annotations: { 'fnhost.dev/updated-at': '2026-11-21T10:00:00.123Z' } });
    expect(updatedAt(base, '2026-11-20T10:00:00.000Z')).to.equal('2026-11-21T10:00:00.123Z');
    // The gateway's own write in the same second as its annotation: the annotation's milliseconds stay.
    const own = resource({}, { ...base.metadata, managedFields: [specBy('fnhost-gateway', '2026-11-21T10:00:00Z')] });
    expect(updatedAt(own, created)).to.equal('2026-11-21T10:00:00.123Z');
    const edited = resource({}, {
      ...base.metadata,
      managedFields: [
        specBy('fnhost-gateway', '2026-11-21T10:00:00Z'),
        specBy('kubectl-edit', '2026-11-22T08:30:00Z'),
        specBy('fnhost-gateway', '2026-11-23T00:00:00Z', 'status'),
        { manager: 'fnhost-operator', operation: 'Update', time: '2026-11-24T00:00:00Z', fieldsV1: { 'f:metadata': { 'f:finalizers': {} } } },
      ],
    });
    expect(updatedAt(edited, created)).to.equal('2026-11-22T08:30:00.000Z');
    expect(recordFromResource(edited)!.updated_at).to.equal('2026-11-22T08:30:00.000Z');
    expect(updatedAt(resource({}, { creationTimestamp: created }), '2026-11-20T10:00:00.000Z')).to.equal('2026-11-20T10:00:00.000Z');
  });

  it('rollout is the Ready condition against the generation', () => {
    const res = resource({}, { generation: 4 });
    expect(rolloutOf(res)).to.deep.equal({ generation: 4, observed_generation: 0, ready: 'Unknown', reason: '', message: '' });
    res.status = { observedGeneration: 4, conditions: [{ type: 'Ready', status: 'True', reason: 'Available', message: '1 of 1', observedGeneration: 3, lastTransitionTime: 'x' }] };
    expect(rolloutOf(res)).to.deep.equal({ generation: 4, observed_generation: 3, ready: 'True', reason: 'Available', message: '1 of 1' });
  });
});
