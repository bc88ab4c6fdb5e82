import { expect } from 'chai';
import { derivedFunctionId, deriveToken, uuidV5 } from '@fnhost/core/function-identity.ts';

// The values the operator and the cluster-mode gateway both derive. The
// expected strings were computed independently (Python's uuid.uuid5 and
// hmac); a change here would re-key every deployed function.

describe('core: function identity and per-function tokens', () => {
  it('uuidV5 matches the RFC 4122 example (DNS namespace, www.example.com)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).to.equal('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('derives a fixed functionId from namespace/name', () => {
    expect(derivedFunctionId('default', 'hello')).to.equal('21de7b0b-759a-525c-b35b-48f25425061e');
    expect(derivedFunctionId('team-a', 'hello')).to.not.equal(derivedFunctionId('default', 'hello'));
  });

  it('derives runtime and schedule tokens as HMAC-SHA256 of purpose and id, base64url', () => {
    const id = '21de7b0b-759a-525c-b35b-48f25425061e';
    expect(deriveToken('k'.repeat(32), 'runtime', id)).to.equal('QZtujYwIuUHg2FpAzfDjo0zck9X8L9fvyWuTYEJsxOc');
    expect(deriveToken('k'.repeat(32), 'schedule', id)).to.equal('wKAqDC7qYaNl92vlcL-Cm2VnenqIYTu7ROdJdEQQwb4');
    expect(deriveToken('j'.repeat(32), 'runtime', id)).to.not.equal(deriveToken('k'.repeat(32), 'runtime', id));
  });
});
