import { expect } from 'chai';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { recordFromResource, resourceForCreate, specPatch } from '../../../gateway/src/cluster/resource.ts';

// The API's code_ref and the Function's spec.codeRef (docs/cluster-mode.md "Large code"): read,
// written at create, and a switch between inline and referenced code nulls the other field
// (the CRD admits exactly one).

const DIGEST = `sha256:${'ef'.repeat(32)}`;
const res = (spec: FunctionResource['spec']): FunctionResource => ({ apiVersion: API_VERSION, kind: KIND, metadata: { name: 'big', namespace: 'ns', resourceVersion: '1' }, spec });

describe('cluster mode: code_ref <-> spec.codeRef', () => {
  it('reads spec.codeRef as code_ref with empty code, and writes it back at create', () => {
    const record = recordFromResource(res({ codeRef: { digest: DIGEST, size: 2_000_000 } }))!;
    expect(record.code).to.equal('');
    expect(record.code_ref).to.deep.equal({ digest: DIGEST, size: 2_000_000 });
    const written = resourceForCreate(record);
    expect(written.spec.codeRef).to.deep.equal({ digest: DIGEST, size: 2_000_000 });
    expect(written.spec).not.to.have.property('code');
    expect(recordFromResource(res({}))).to.equal(null);
  });

  it('a switch between inline and referenced code removes the other field', () => {
    const inline = recordFromResource(res({ code: 'export default () => {}' }))!;
    const toRef = specPatch(inline, { ...inline, code: '', code_ref: { digest: DIGEST, size: 9 } }, res({ code: 'x' }))!;
    expect(toRef.spec).to.deep.include({ code: null, codeRef: { digest: DIGEST, size: 9 } });
    const referenced = recordFromResource(res({ codeRef: { digest: DIGEST, size: 9 } }))!;
    const toInline = specPatch(referenced, { ...referenced, code: 'export default () => 1', code_ref: undefined }, res({ codeRef: { digest: DIGEST, size: 9 } }))!;
    expect(toInline.spec).to.deep.include({ code: 'export default () => 1', codeRef: null });
    expect(specPatch(referenced, { ...referenced }, res({ codeRef: { digest: DIGEST, size: 9 } }))).to.equal(null);
  });
});
