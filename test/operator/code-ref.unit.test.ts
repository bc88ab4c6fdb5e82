import { expect } from 'chai';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { checkCodeSource, codeLabel, codeMissing, codeMissingRecheckMs } from '../../operator/src/code-ref.ts';
import { checkSpec } from '../../operator/src/validate.ts';
import { configMapFor, deploymentFor, configHash } from '../../operator/src/builders/index.ts';
import { ANNOTATION_CODE_DIGEST } from '../../operator/src/builders/deployment.ts';
import { testSettings } from './fixtures.ts';

// spec.codeRef on the operator's side (docs/cluster-mode.md "Large code"): exactly one of code and
// codeRef; a digest the Function's namespace has not uploaded is CodeMissing (tenancy by
// namespace: the store answers per namespace); the pods get the digest, an empty ConfigMap and a
// /tmp grown by the code's size; the Code column.

const DIGEST = `sha256:${'ab'.repeat(32)}`;
const MiB = 1024 * 1024;
function fn(spec: FunctionResource['spec'], namespace = 'team-a'): FunctionResource {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'big', namespace, uid: 'u1', generation: 1 }, spec };
}

describe('operator: code by reference (spec.codeRef)', () => {
  it('takes exactly one of code and codeRef, a well-formed digest and a size within 50 MiB', () => {
    expect(checkCodeSource(fn({ codeRef: { digest: DIGEST, size: 5 * MiB } }))).to.equal(null);
    expect(checkCodeSource(fn({ code: 'x', codeRef: { digest: DIGEST, size: 5 } }))).to.include({ reason: 'InvalidCode' });
    expect(checkCodeSource(fn({ codeRef: { digest: 'sha256:XYZ', size: 5 } }))!.message).to.include('"sha256:XYZ" is malformed');
    expect(checkCodeSource(fn({ codeRef: { digest: DIGEST, size: 51 * MiB } }))).to.include({ reason: 'CodeTooLarge' });
    expect(checkSpec(fn({ codeRef: { digest: DIGEST, size: 5 * MiB } }), testSettings())).to.equal(null);
    expect(checkSpec(fn({}), testSettings())).to.include({ reason: 'InvalidCode' });
  });

  it('is CodeMissing, naming the digest, for a namespace that did not upload it; looked at again soon, then every minute', async () => {
    const uploadedBy = new Map([[DIGEST, new Set(['team-a'])]]);
    const presence = async (ns: string, digest: string) => uploadedBy.get(digest)?.has(ns) === true;
    expect(await codeMissing(fn({ codeRef: { digest: DIGEST, size: 5 } }), presence)).to.equal(null);
    const other = await codeMissing(fn({ codeRef: { digest: DIGEST, size: 5 } }, 'team-b'), presence);
    expect(other).to.include({ reason: 'CodeMissing' });
    expect(other!.message).to.include(DIGEST).and.include('namespace team-b has not uploaded');
    expect(await codeMissing(fn({ code: 'x' }), presence)).to.equal(null);
    expect(await codeMissing(fn({ codeRef: { digest: DIGEST, size: 5 } }), undefined)).to.include({ reason: 'CodeMissing' });
    expect(codeMissingRecheckMs(0)).to.equal(5_000);
    expect(codeMissingRecheckMs(3_600_000)).to.equal(60_000);
  });

  it('gives the pods the digest (env and template annotation), an empty ConfigMap and /tmp grown by the size', () => {
    const settings = testSettings();
    const ref = fn({ codeRef: { digest: DIGEST, size: 5 * MiB } });
    expect(configMapFor(ref).data).to.deep.equal({});
    const d = deploymentFor(ref, settings) as any;
    const tpl = d.spec.template;
    const env = Object.fromEntries(tpl.spec.containers[0].env.filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]));
    expect(env).to.include({ FNHOST_CODE_DIGEST: DIGEST, FNHOST_CODE_SIZE: String(5 * MiB), FNHOST_FUNCTION_FILE: `/tmp/fnhost-code/${'ab'.repeat(32)}.js` });
    expect(tpl.metadata.annotations[ANNOTATION_CODE_DIGEST]).to.equal(DIGEST);
    expect(tpl.spec.volumes.find((v: any) => v.name === 'tmp').emptyDir.sizeLimit).to.equal('69Mi');
    // Another digest rolls the pods (the config hash changes).
    expect(configHash(ref, settings)).not.to.equal(configHash(fn({ codeRef: { digest: `sha256:${'cd'.repeat(32)}`, size: 5 * MiB } }), settings));
    // Inline code: as before.
    const inline = deploymentFor(fn({ code: 'export default () => {}' }), settings) as any;
    expect(inline.spec.template.metadata.annotations[ANNOTATION_CODE_DIGEST]).to.equal(undefined);
    expect(configMapFor(fn({ code: 'x' })).data).to.deep.equal({ 'index.js': 'x' });
  });

  it('shows inline or the short digest in the Code column', () => {
    expect(codeLabel(fn({ code: 'x' }))).to.equal('inline');
    expect(codeLabel(fn({ codeRef: { digest: DIGEST, size: 5 } }))).to.equal(`sha256:${'ab'.repeat(6)}`);
  });
});
