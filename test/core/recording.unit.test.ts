import { expect } from 'chai';
import {
  RECORDING_OFF, maskJsonPath, parseJsonPath, recordBody, recordHeaders, recordRequest, validateRequestRecording,
} from '../../core/src/recording.ts';
import { diffResponses, formatChanges } from '../../core/src/replay-diff.ts';
import type { RequestRecording } from '../../core/src/model.ts';

const on = (redact: Partial<RequestRecording['redact']> = {}, max = 65536): RequestRecording => ({ enabled: true, max_body_bytes: max, redact: { headers: [], json_paths: [], ...redact } });
const text = (data: string) => ({ encoding: 'utf8' as const, data, size: Buffer.byteLength(data), truncated: false });

describe('request recording: settings, redaction, capture', () => {
  it('validates the setting: shorthand booleans, defaults kept, every bad value named', () => {
    expect(validateRequestRecording(true)).to.deep.equal({ ...RECORDING_OFF, enabled: true });
    const current = on({ headers: ['x-a'] }, 100);
    expect(validateRequestRecording({ enabled: false }, current)).to.deep.equal({ ...current, enabled: false });
    expect(validateRequestRecording({ redact: { headers: ['X-Card', 'x-card'] } }).redact.headers).to.deep.equal(['x-card']);
    expect(() => validateRequestRecording('on')).to.throw(/must be true, false or an object/);
    expect(() => validateRequestRecording({ max_body_bytes: -1 })).to.throw(/from 0 to 65536, got -1/);
    expect(() => validateRequestRecording({ redact: { json_paths: new Array(51).fill('$.a') } })).to.throw(/51 entries; at most 50/);
  });

  it('parses the JSONPath subset and refuses filters and script', () => {
    expect(parseJsonPath(`$.a['b c'][2][*].d..e`)).to.deep.equal([{ name: 'a' }, { name: 'b c' }, { index: 2 }, { any: true }, { name: 'd' }, { deep: 'e' }]);
    for (const bad of ['a.b', '$', '$.a[?(@.x>1)]', '$.a[(1+1)]', '$.a b', '$..']) expect(() => parseJsonPath(bad), bad).to.throw(/JSON path .* is invalid/);
  });

  it('masks what a path reaches, at any depth with .., and nothing else', () => {
    const doc = { card: { number: '4111', cvc: '1' }, items: [{ iban: 'A' }, { iban: 'B' }], nested: { card: { number: '5500' } } };
    expect(maskJsonPath(doc, parseJsonPath('$.items[*].iban'))).to.equal(2);
    expect(maskJsonPath(doc, parseJsonPath('$..card.number'))).to.equal(2);
    expect(maskJsonPath(doc, parseJsonPath('$.missing.x'))).to.equal(0);
    expect(doc).to.deep.equal({ card: { number: '[redacted]', cvc: '1' }, items: [{ iban: '[redacted]' }, { iban: '[redacted]' }], nested: { card: { number: '[redacted]' } } });
  });

  it('never records credentials or platform headers; masks the named ones', () => {
    const headers = recordHeaders({ Authorization: 'Bearer s', cookie: 'a=b', 'proxy-authorization': 'x', 'x-fnhost-schedule-token': 't', 'x-key': 'k', accept: ['a', 'b'] }, on({ headers: ['x-key'] }));
    expect(headers).to.deep.equal({ 'x-key': '[redacted]', accept: 'a, b' });
  });

  it('bounds bodies: cut and marked without a JSON policy, not kept at all when a JSON policy cannot be applied', () => {
    expect(recordBody(Buffer.from('abcdef'), 'text/plain', on({}, 4))).to.deep.equal({ encoding: 'utf8', data: 'abcd', size: 6, truncated: true });
    expect(recordBody(Buffer.from('{"card":{"number":"1"}}'), 'application/json', on({ json_paths: ['$.card.number'] }, 8))).to.include({ data: '', truncated: true });
    expect(recordBody(Buffer.from('{not json'), 'application/json', on({ json_paths: ['$.a'] }))?.omitted).to.match(/does not parse/);
    expect(recordBody(Buffer.from([0xff, 0x00, 0x01]), 'application/octet-stream', on())).to.deep.equal({ encoding: 'base64', data: '/wAB', size: 3, truncated: false });
    expect(recordBody(Buffer.alloc(0), undefined, on())).to.equal(null);
    const request = recordRequest('POST', '/pay?x=1', { 'content-type': 'application/vnd.api+json' }, Buffer.from('{"card":{"number":"4111"}}'), on({ json_paths: ['$.card.number'] }));
    expect(request).to.deep.include({ method: 'POST', path: '/pay', query: 'x=1' });
    expect(JSON.parse(request.body!.data)).to.deep.equal({ card: { number: '[redacted]' } });
  });
});

describe('replay difference', () => {
  it('compares status, headers (not volatile ones) and JSON bodies structurally', () => {
    const recorded = { status: 200, headers: { 'content-type': 'application/json', date: 'Mon', 'x-a': '1' }, body: text('{"a":1,"b":[1,2],"c":{"d":"x"}}') };
    const replayed = { status: 201, headers: { 'content-type': 'application/json', date: 'Tue', 'x-b': '2' }, body: text('{ "c": {"d": "x"}, "b": [1], "a": 2, "e": null }') };
    const changes = diffResponses(recorded, replayed);
    expect(changes).to.deep.equal([
      { kind: 'status', recorded: 200, replayed: 201 },
      { kind: 'header', name: 'x-a', recorded: '1', replayed: undefined },
      { kind: 'header', name: 'x-b', recorded: undefined, replayed: '2' },
      { kind: 'json', path: '$.a', recorded: 1, replayed: 2 },
      { kind: 'json', path: '$.b[1]', recorded: 2, replayed: undefined },
      { kind: 'json', path: '$.e', recorded: undefined, replayed: null },
    ]);
    expect(formatChanges(changes)).to.include.members(['body $.a', '  - 1', '  + 2', 'header x-b', '  - (absent)']);
    expect(diffResponses(recorded, { ...recorded, headers: { ...recorded.headers, date: 'Wed' }, body: text('{"c":{"d":"x"},"b":[1,2],"a":1}') })).to.deep.equal([]);
    expect(formatChanges([])).to.deep.equal(['No difference: same status, headers and body.']);
  });

  it('compares other bodies as text, and says when the recorded body cannot be compared', () => {
    expect(diffResponses({ status: 200, headers: {}, body: text('hello') }, { status: 200, headers: {}, body: text('bye') })).to.deep.equal([{ kind: 'text', recorded: 'hello', replayed: 'bye' }]);
    const cut = { encoding: 'utf8' as const, data: 'ab', size: 10, truncated: true };
    expect(diffResponses({ status: 200, headers: {}, body: cut }, { status: 200, headers: {}, body: text('abcdefghij') })).to.deep.equal([{ kind: 'body-not-comparable', reason: 'the recorded body was cut at 2 of 10 bytes' }]);
  });
});

describe('request recording: masking never lets a masked value through', () => {
  // Every case: the value at a configured path must not occur in what is stored.
  const stored = (body: string, contentType: string | undefined, paths: string[]) => recordBody(Buffer.from(body), contentType, on({ json_paths: paths }));

  it('masks a member whose name is escaped in the JSON text (pass\\u0077ord is password)', () => {
    const body = stored('{"user":"ada","pass\\u0077ord":"s3cret","n":{"\\u0070assword":"t0p"}}', 'application/json', ['$..password']);
    expect(body!.data).not.to.match(/s3cret|t0p/);
    expect(JSON.parse(body!.data)).to.deep.equal({ user: 'ada', password: '[redacted]', n: { password: '[redacted]' } });
  });

  it('masks through nested arrays, by wildcard, index and at any depth', () => {
    const doc = '{"rows":[[{"pin":"1111"},{"pin":"2222"}],[{"pin":"3333","deep":[[{"pin":"4444"}]]}]],"list":["a","b"]}';
    const deep = stored(doc, 'application/json', ['$..pin']);
    expect(deep!.data).not.to.match(/1111|2222|3333|4444/);
    const wildcard = stored(doc, 'application/json', ['$.rows[*][*].pin', '$.list[1]']);
    expect(JSON.parse(wildcard!.data)).to.deep.equal({ rows: [[{ pin: '[redacted]' }, { pin: '[redacted]' }], [{ pin: '[redacted]', deep: [[{ pin: '4444' }]] }]], list: ['a', '[redacted]'] });
    const every = stored('{"a":{"x":1,"y":[2]},"b":3}', 'application/json', ['$.*']);
    expect(JSON.parse(every!.data)).to.deep.equal({ a: '[redacted]', b: '[redacted]' });
  });

  it('keeps only the last of duplicate members, masked, as JSON.parse reads them', () => {
    const body = stored('{"card":{"number":"4111"},"card":{"number":"5500"}}', 'application/json', ['$.card.number']);
    expect(body!.data).not.to.match(/4111|5500/);
  });

  it('masks a member named __proto__ as an ordinary member', () => {
    const body = stored('{"__proto__":{"token":"tok_9"}}', 'application/json', ['$.__proto__.token']);
    expect(body!.data).not.to.include('tok_9');
    expect(JSON.parse(body!.data)).to.deep.equal(JSON.parse('{"__proto__":{"token":"[redacted]"}}'));
  });

  it('goes by the content type: JSON sent as text/plain is kept as sent, text sent as JSON is not kept', () => {
    // docs/replay.md "What is kept": paths apply to bodies whose Content-Type is JSON.
    expect(stored('{"password":"p"}', 'text/plain', ['$.password'])).to.deep.include({ encoding: 'utf8', data: '{"password":"p"}' });
    const notJson = stored('password=p', 'application/json; charset=utf-8', ['$.password']);
    expect(notJson).to.include({ data: '' });
    expect(notJson!.omitted).to.match(/does not parse/);
    expect(stored('{"password":"p"}', 'application/problem+json', ['$.password'])!.data).not.to.include('"p"');
  });

  it('parses a policy once, and again when its list of paths changes in place', () => {
    const policy = on({ json_paths: ['$.a'] });
    expect(JSON.parse(recordBody(Buffer.from('{"a":"1","b":"2"}'), 'application/json', policy)!.data)).to.deep.equal({ a: '[redacted]', b: '2' });
    policy.redact.json_paths.push('$.b');
    expect(recordBody(Buffer.from('{"a":"1","b":"2"}'), 'application/json', policy)!.data).not.to.match(/"1"|"2"/);
    policy.redact.json_paths[0] = '$.c';
    expect(JSON.parse(recordBody(Buffer.from('{"a":"1","b":"2","c":"3"}'), 'application/json', policy)!.data)).to.deep.equal({ a: '1', b: '[redacted]', c: '[redacted]' });
  });

  it('keeps text that is UTF-8 as text and anything else (or text holding U+FFFD) in base64', () => {
    expect(recordBody(Buffer.from('héllo'), 'text/plain', on())).to.deep.include({ encoding: 'utf8', data: 'héllo' });
    expect(recordBody(Buffer.from('a\uFFFDb'), 'text/plain', on())).to.deep.include({ encoding: 'base64', data: Buffer.from('a\uFFFDb').toString('base64') });
    const cut = recordBody(Buffer.from('é'), 'text/plain', on({}, 1));
    expect(cut).to.deep.equal({ encoding: 'base64', data: Buffer.from([0xc3]).toString('base64'), size: 2, truncated: true });
  });
});
