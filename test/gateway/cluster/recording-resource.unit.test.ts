import { expect } from 'chai';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { recordFromResource, resourceForCreate, specPatch } from '../../../gateway/src/cluster/resource.ts';

// spec.recordRequests of the Function resource ↔ FunctionRecord.record_requests (docs/replay.md).

function resource(spec: Partial<FunctionResource['spec']> = {}): FunctionResource {
  return {
    apiVersion: 'fnhost.dev/v1alpha1',
    kind: 'Function',
    metadata: { name: 'pay', namespace: 'team-a', uid: 'u1', resourceVersion: '1', creationTimestamp: '2026-11-23T10:00:00Z' },
    spec: { code: 'export default (req, res) => res.json({})', ...spec },
  };
}

describe('cluster mode: spec.recordRequests', () => {
  it('is absent (off) when the resource names none, and maps every field with the CRD defaults', () => {
    expect(recordFromResource(resource())!.record_requests).to.equal(undefined);
    expect(recordFromResource(resource({ recordRequests: { enabled: true, redact: { jsonPaths: ['$..iban'] } } }))!.record_requests)
      .to.deep.equal({ enabled: true, max_body_bytes: 65536, redact: { headers: [], json_paths: ['$..iban'] } });
  });

  it('turns recording off for a policy the gateway cannot parse (kubectl applied it), rather than store unmasked data', () => {
    expect(recordFromResource(resource({ recordRequests: { enabled: true, redact: { jsonPaths: ['$.a[?(@.x)]'] } } }))!.record_requests).to.equal(undefined);
  });

  it('is written on create and patched only when it changed', () => {
    const fn = { ...recordFromResource(resource())!, record_requests: { enabled: true, max_body_bytes: 1024, redact: { headers: ['x-key'], json_paths: [] } } };
    expect(resourceForCreate(fn).spec.recordRequests).to.deep.equal({ enabled: true, maxBodyBytes: 1024, redact: { headers: ['x-key'], jsonPaths: [] } });
    const current = resourceForCreate(fn);
    expect(specPatch(fn, { ...fn }, current)).to.equal(null);
    const off = { ...fn, record_requests: { ...fn.record_requests, enabled: false }, updated_at: '2026-11-24T00:00:00.000Z' };
    expect((specPatch(fn, off, current)!.spec as Record<string, unknown>).recordRequests).to.deep.include({ enabled: false });
  });
});
