import { expect } from 'chai';
import { COMMON_CONTENT_TYPES, contentTypeOf, typeFromName, withCharset } from '../../runtime-image/src/content-type.ts';
import { mime } from '../../runtime-image/src/libraries.ts';

describe('runtime content types (mime-types, content-type)', () => {
  it('the types res.json/send/sendStatus set without loading the mime database are what mime-types answers', () => {
    for (const [value, expected] of COMMON_CONTENT_TYPES) expect(mime().mimeTypes.contentType(value), value).to.equal(expected);
  });
  it('res.type names: extensions and short names through mime-types, unknown → octet-stream, a full type kept', () => {
    expect(typeFromName('json')).to.equal('application/json; charset=utf-8');
    expect(typeFromName('.png')).to.equal('image/png');
    expect(typeFromName('foo.js')).to.equal('text/javascript; charset=utf-8');
    expect(typeFromName('FILE.JSON')).to.equal('application/json; charset=utf-8');
    expect(typeFromName('file.tar.gz')).to.equal('application/gzip');
    expect(typeFromName('no-such-extension-xyz')).to.equal('application/octet-stream');
    expect(typeFromName('text/csv')).to.equal('text/csv');
    expect(contentTypeOf('text/csv')).to.equal('text/csv; charset=utf-8');
    expect(contentTypeOf('text/x-odd; charset=latin1')).to.equal('text/x-odd; charset=latin1');
  });
  it('withCharset replaces the charset parameter and refuses a type it cannot parse', () => {
    expect(withCharset('text/html; charset=iso-8859-1', 'utf-8')).to.equal('text/html; charset=utf-8');
    expect(withCharset('application/vnd.api+json', 'utf-8')).to.equal('application/vnd.api+json; charset=utf-8');
    expect(() => withCharset('not a type', 'utf-8')).to.throw(TypeError, /invalid type/i);
  });
});
