import { expect } from 'chai';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { recordFromResource, resourceForCreate, specPatch } from '../../../gateway/src/cluster/resource.ts';

// spec.async of the Function resource ↔ FunctionRecord.async (docs/async.md).

function resource(spec: Partial<FunctionResource['spec']> = {}): FunctionResource {
  return {
    apiVersion: 'fnhost.dev/v1alpha1',
    kind: 'Function',
    metadata: { name: 'jobs', namespace: 'team-a', uid: 'u1', resourceVersion: '1', creationTimestamp: '2026-11-23T10:00:00Z' },
    spec: { code: 'export default (req, res) => res.json({})', ...spec },
  };
}

describe('cluster mode: spec.async', () => {
  it('is absent (the defaults) when the resource names none, and maps the fields it names', () => {
    expect(recordFromResource(resource())!.async).to.equal(undefined);
    expect(recordFromResource(resource({ async: {} }))!.async).to.equal(undefined);
    expect(recordFromResource(resource({ async: { maxRetries: 0, maxAgeSeconds: 600 } }))!.async).to.deep.equal({ max_retries: 0, max_age_seconds: 600 });
  });

  it('is written on create, and patched only when it changed, with null for a field returned to the default', () => {
    const fn = { ...recordFromResource(resource())!, async: { max_retries: 1, max_age_seconds: 120 } };
    expect(resourceForCreate(fn).spec.async).to.deep.equal({ maxRetries: 1, maxAgeSeconds: 120 });
    expect(resourceForCreate({ ...fn, async: undefined }).spec.async).to.equal(undefined);
    const current = resourceForCreate(fn);
    expect(specPatch(fn, { ...fn }, current)).to.equal(null);
    const changed = { ...fn, async: { max_retries: 0 }, updated_at: '2026-11-24T00:00:00.000Z' };
    expect((specPatch(fn, changed, current)!.spec as Record<string, unknown>).async).to.deep.equal({ maxRetries: 0, maxAgeSeconds: null, callbackHosts: null });
  });

  it('maps callbackHosts both ways, leaving out an entry core\'s rules refuse (the CRD\'s pattern is coarser)', () => {
    expect(recordFromResource(resource({ async: { callbackHosts: ['Hooks.Example.com', '*.example.org'] } }))!.async).to.deep.equal({ callback_hosts: ['hooks.example.com', '*.example.org'] });
    expect(recordFromResource(resource({ async: { callbackHosts: ['bad host', 'ok.example.com'] } }))!.async).to.deep.equal({ callback_hosts: ['ok.example.com'] });
    expect(recordFromResource(resource({ async: { callbackHosts: [] } }))!.async).to.equal(undefined);
    const fn = { ...recordFromResource(resource())!, async: { callback_hosts: ['hooks.example.com'] } };
    expect(resourceForCreate(fn).spec.async).to.deep.equal({ callbackHosts: ['hooks.example.com'] });
    const current = resourceForCreate(fn);
    const cleared = { ...fn, async: undefined, updated_at: '2026-11-24T00:00:00.000Z' };
    expect((specPatch(fn, cleared, current)!.spec as Record<string, unknown>).async).to.deep.equal({ maxRetries: null, maxAgeSeconds: null, callbackHosts: null });
  });
});
