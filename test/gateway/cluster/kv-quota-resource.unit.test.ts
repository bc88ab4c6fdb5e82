import { expect } from 'chai';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { recordFromResource, resourceForCreate, specPatch } from '../../../gateway/src/cluster/resource.ts';

// spec.kvQuota of the Function resource ↔ FunctionRecord.kv_quota (docs/kv.md "Quotas").

function resource(spec: Partial<FunctionResource['spec']> = {}): FunctionResource {
  return {
    apiVersion: 'fnhost.dev/v1alpha1',
    kind: 'Function',
    metadata: { name: 'notes', namespace: 'team-a', uid: 'u1', resourceVersion: '1', creationTimestamp: '2026-11-23T10:00:00Z' },
    spec: { code: 'export default (req, res) => res.json({})', ...spec },
  };
}

describe('cluster mode: spec.kvQuota', () => {
  it('is absent (the platform default) when the resource names none, and maps the fields it names', () => {
    expect(recordFromResource(resource())!.kv_quota).to.equal(undefined);
    expect(recordFromResource(resource({ kvQuota: {} }))!.kv_quota).to.equal(undefined);
    expect(recordFromResource(resource({ kvQuota: { maxBytes: 1048576 } }))!.kv_quota).to.deep.equal({ max_bytes: 1048576 });
    expect(recordFromResource(resource({ kvQuota: { maxBytes: 5, maxKeys: 7 } }))!.kv_quota).to.deep.equal({ max_bytes: 5, max_keys: 7 });
  });

  it('is written on create, and patched only when it changed, with null for a field returned to the default', () => {
    const fn = { ...recordFromResource(resource())!, kv_quota: { max_bytes: 1024, max_keys: 10 } };
    expect(resourceForCreate(fn).spec.kvQuota).to.deep.equal({ maxBytes: 1024, maxKeys: 10 });
    expect(resourceForCreate({ ...fn, kv_quota: undefined }).spec.kvQuota).to.equal(undefined);
    const current = resourceForCreate(fn);
    expect(specPatch(fn, { ...fn }, current)).to.equal(null);
    const changed = { ...fn, kv_quota: { max_keys: 10 }, updated_at: '2026-11-24T00:00:00.000Z' };
    expect((specPatch(fn, changed, current)!.spec as Record<string, unknown>).kvQuota).to.deep.equal({ maxBytes: null, maxKeys: 10 });
  });
});
