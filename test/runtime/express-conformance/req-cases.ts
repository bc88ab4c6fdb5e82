// Express 5's test/req.*.js cases (expressjs/express a3714473), one for one, for every `req` member
// docs/runtime.md documents. Cases of app settings a handler has no equivalent of ('trust proxy',
// 'subdomain offset', 'query parser', sub-apps) are not ported: the gateway's FNHOST_TRUST_PROXY
// plays 'trust proxy' and is tested in test/gateway.
import { THROWN, type Case } from './case.ts';

const JSON_POST = (type: string) => ({ method: 'POST', headers: { 'content-type': type }, body: '{}' });
const GATEWAY_XFF = 'the gateway replaces a caller\'s X-Forwarded-For with the address it saw (docs/gateway.md "The header policy"), and req.ips reads that header: Express without "trust proxy" gives []';

export const REQ_CASES: Case[] = [
  // req.accepts.js
  { it: 'req.accepts(type) should return true when Accept is not present', run: `res.end(req.accepts('json') ? 'yes' : 'no')`, expect: { body: 'yes' } },
  { it: 'req.accepts(type) should return true when present', run: `res.end(req.accepts('json') ? 'yes' : 'no')`, req: { headers: { accept: 'application/json' } }, expect: { body: 'yes' } },
  { it: 'req.accepts(type) should return false otherwise', run: `res.end(req.accepts('json') ? 'yes' : 'no')`, req: { headers: { accept: 'text/html' } }, expect: { body: 'no' } },
  { it: 'req.accepts(...types) should accept an argument list of type names', run: `res.end(req.accepts('json', 'html'))`, req: { headers: { accept: 'application/json' } }, expect: { body: 'json' } },
  { it: 'req.accepts(types) should return the first when Accept is not present', run: `res.end(req.accepts(['json', 'html']))`, expect: { body: 'json' } },
  { it: 'req.accepts(types) should return the first acceptable type', run: `res.end(req.accepts(['json', 'html']))`, req: { headers: { accept: 'text/html' } }, expect: { body: 'html' } },
  { it: 'req.accepts(types) should return false when no match is made', run: `res.end(req.accepts(['text/html', 'application/json']) ? 'yup' : 'nope')`, req: { headers: { accept: 'foo/bar, bar/baz' } }, expect: { body: 'nope' } },
  { it: 'req.accepts(types) should take quality into account', run: `res.end(req.accepts(['text/html', 'application/json']))`, req: { headers: { accept: '*/html; q=.5, application/json' } }, expect: { body: 'application/json' } },
  { it: 'req.accepts(types) should return the first acceptable type with canonical mime types', run: `res.end(req.accepts(['application/json', 'text/html']))`, req: { headers: { accept: '*/html' } }, expect: { body: 'text/html' } },
  // req.acceptsCharsets.js
  { it: 'req.acceptsCharsets(type) when Accept-Charset is not present should return true', run: `res.end(req.acceptsCharsets('utf-8') ? 'yes' : 'no')`, expect: { body: 'yes' } },
  { it: 'req.acceptsCharsets(type) when Accept-Charset is present should return true', run: `res.end(req.acceptsCharsets('utf-8') ? 'yes' : 'no')`, req: { headers: { 'accept-charset': 'foo, bar, utf-8' } }, expect: { body: 'yes' } },
  { it: 'req.acceptsCharsets(type) when Accept-Charset is present should return false otherwise', run: `res.end(req.acceptsCharsets('utf-8') ? 'yes' : 'no')`, req: { headers: { 'accept-charset': 'foo, bar' } }, expect: { body: 'no' } },
  { it: 'req.acceptsCharsets(type) should return the best matching charset from multiple inputs', run: `res.end(req.acceptsCharsets('utf-8', 'iso-8859-1'))`, req: { headers: { 'accept-charset': 'iso-8859-1, utf-8' } }, expect: { body: 'iso-8859-1' } },
  // req.acceptsEncodings.js
  { it: 'req.acceptsEncodings should return encoding if accepted', run: `res.send({ gzip: req.acceptsEncodings('gzip'), deflate: req.acceptsEncodings('deflate') })`, req: { headers: { 'accept-encoding': ' gzip, deflate' } }, expect: { status: 200, json: { gzip: 'gzip', deflate: 'deflate' } } },
  { it: 'req.acceptsEncodings should be false if encoding not accepted', run: `res.send({ bogus: req.acceptsEncodings('bogus') })`, req: { headers: { 'accept-encoding': ' gzip, deflate' } }, expect: { status: 200, json: { bogus: false } } },
  // req.acceptsLanguages.js
  { it: 'req.acceptsLanguages should return language if accepted', run: `res.send({ 'en-us': req.acceptsLanguages('en-us'), en: req.acceptsLanguages('en') })`, req: { headers: { 'accept-language': 'en;q=.5, en-us' } }, expect: { json: { 'en-us': 'en-us', en: 'en' } } },
  { it: 'req.acceptsLanguages should be false if language not accepted', run: `res.send({ es: req.acceptsLanguages('es') })`, req: { headers: { 'accept-language': 'en;q=.5, en-us' } }, expect: { json: { es: false } } },
  { it: 'req.acceptsLanguages when Accept-Language is not present should always return language', run: `res.send({ en: req.acceptsLanguages('en'), es: req.acceptsLanguages('es'), jp: req.acceptsLanguages('jp') })`, expect: { json: { en: 'en', es: 'es', jp: 'jp' } } },
  // req.fresh.js
  { it: 'req.fresh should return true when the resource is not modified', run: `res.set('ETag', '"12345"'); res.send(req.fresh)`, req: { headers: { 'if-none-match': '"12345"' } }, expect: { status: 304 } },
  { it: 'req.fresh should return false when the resource is modified', run: `res.set('ETag', '"123"'); res.send(req.fresh)`, req: { headers: { 'if-none-match': '"12345"' } }, expect: { status: 200, body: 'false' } },
  { it: 'req.fresh should return false without response headers', run: `res.send(req.fresh)`, expect: { status: 200, body: 'false' } },
  { it: 'req.fresh should ignore "If-Modified-Since" when "If-None-Match" is present', run: `res.set('Etag', '"FooBar"'); res.set('Last-Modified', new Date(Date.parse('2026-01-02T00:00:00Z')).toUTCString()); res.send(req.fresh)`, req: { headers: { 'if-modified-since': 'Thu, 01 Jan 2026 00:00:00 GMT', 'if-none-match': '"FooBar"' } }, expect: { status: 304 } },
  // req.stale.js
  { it: 'req.stale should return false when the resource is not modified', run: `res.set('ETag', '"12345"'); res.send(req.stale)`, req: { headers: { 'if-none-match': '"12345"' } }, expect: { status: 304 } },
  { it: 'req.stale should return true when the resource is modified', run: `res.set('ETag', '"123"'); res.send(req.stale)`, req: { headers: { 'if-none-match': '"12345"' } }, expect: { status: 200, body: 'true' } },
  { it: 'req.stale should return true without response headers', run: `res.send(req.stale)`, expect: { status: 200, body: 'true' } },
  // req.get.js
  { it: 'req.get(field) should return the header field value', run: `if (req.get('Something-Else') !== undefined) throw new Error('not undefined'); res.end(req.get('Content-Type'))`, req: { method: 'POST', headers: { 'content-type': 'application/json' } }, expect: { body: 'application/json' } },
  { it: 'req.get(field) should special-case Referer', run: `res.end(req.get('Referer'))`, req: { method: 'POST', headers: { referrer: 'http://foobar.com' } }, expect: { body: 'http://foobar.com' } },
  { it: 'req.get(field) should throw missing header name', run: `res.end(req.get())`, expect: { error: /TypeError: name argument is required to req\.get/ }, differs: THROWN },
  { it: 'req.get(field) should throw for non-string header name', run: `res.end(req.get(42))`, expect: { error: /TypeError: name must be a string to req\.get/ }, differs: THROWN },
  // req.host.js (the cases without 'trust proxy')
  { it: 'req.host should return the Host when present', run: `res.end(req.host)`, req: { method: 'POST', headers: { host: 'example.com' } }, expect: { body: 'example.com' } },
  { it: 'req.host should strip port number', run: `res.end(req.host)`, req: { method: 'POST', headers: { host: 'example.com:3000' } }, expect: { body: 'example.com:3000' } },
  { it: 'req.host should return undefined otherwise', run: `req.headers.host = null; res.end(String(req.host))`, req: { method: 'POST' }, expect: { body: 'undefined' } },
  { it: 'req.host should work with IPv6 Host', run: `res.end(req.host)`, req: { method: 'POST', headers: { host: '[::1]' } }, expect: { body: '[::1]' } },
  { it: 'req.host should work with IPv6 Host and port', run: `res.end(req.host)`, req: { method: 'POST', headers: { host: '[::1]:3001' } }, expect: { body: '[::1]:3001' } },
  { it: 'req.host when "trust proxy" is disabled should ignore X-Forwarded-Host', run: `res.end(req.host)`, req: { headers: { host: 'localhost', 'x-forwarded-host': 'evil' } }, expect: { body: 'localhost' } },
  // req.hostname.js (the cases without 'trust proxy')
  { it: 'req.hostname should return the Host when present', run: `res.end(req.hostname)`, req: { method: 'POST', headers: { host: 'example.com' } }, expect: { body: 'example.com' } },
  { it: 'req.hostname should strip port number', run: `res.end(req.hostname)`, req: { method: 'POST', headers: { host: 'example.com:3000' } }, expect: { body: 'example.com' } },
  { it: 'req.hostname should return undefined otherwise', run: `req.headers.host = null; res.end(String(req.hostname))`, req: { method: 'POST' }, expect: { body: 'undefined' } },
  { it: 'req.hostname should work with IPv6 Host', run: `res.end(req.hostname)`, req: { method: 'POST', headers: { host: '[::1]' } }, expect: { body: '[::1]' } },
  { it: 'req.hostname should work with IPv6 Host and port', run: `res.end(req.hostname)`, req: { method: 'POST', headers: { host: '[::1]:3000' } }, expect: { body: '[::1]' } },
  { it: 'req.hostname when "trust proxy" is disabled should ignore X-Forwarded-Host', run: `res.end(req.hostname)`, req: { headers: { host: 'localhost', 'x-forwarded-host': 'evil' } }, expect: { body: 'localhost' } },
  // req.ip.js, req.ips.js (the cases without 'trust proxy')
  { it: 'req.ip when X-Forwarded-For is present when "trust proxy" is disabled should return the remote address', run: `res.send(req.ip)`, req: { headers: { 'x-forwarded-for': 'client, p1, p2' } }, expect: { status: 200, body: /^(::ffff:)?127\.0\.0\.1$/ } },
  { it: 'req.ips when X-Forwarded-For is present when "trust proxy" is disabled should return an empty array', run: `res.send(req.ips)`, req: { headers: { 'x-forwarded-for': 'client, p1, p2' } }, expect: { json: ['127.0.0.1'] }, differs: GATEWAY_XFF },
  { it: 'req.ips when X-Forwarded-For is not present should return []', run: `res.send(req.ips)`, expect: { json: ['127.0.0.1'] }, differs: GATEWAY_XFF },
  // req.is.js
  { it: 'req.is() when given a mime type should return the type when matching', run: `res.json(req.is('application/json'))`, req: JSON_POST('application/json'), expect: { status: 200, body: '"application/json"' } },
  { it: 'req.is() when given a mime type should return false when not matching', run: `res.json(req.is('image/jpeg'))`, req: JSON_POST('application/json'), expect: { status: 200, body: 'false' } },
  { it: 'req.is() when given a mime type should ignore charset', run: `res.json(req.is('application/json'))`, req: JSON_POST('application/json; charset=UTF-8'), expect: { status: 200, body: '"application/json"' } },
  { it: 'req.is() when content-type is not present should return false', run: `res.json(req.is('application/json'))`, req: { method: 'POST', body: '{}' }, expect: { status: 200, body: 'false' } },
  { it: 'req.is() when given an extension should lookup the mime type', run: `res.json(req.is('json'))`, req: JSON_POST('application/json'), expect: { status: 200, body: '"json"' } },
  { it: 'req.is() when given */subtype should return the full type when matching', run: `res.json(req.is('*/json'))`, req: JSON_POST('application/json'), expect: { status: 200, body: '"application/json"' } },
  { it: 'req.is() when given */subtype should return false when not matching', run: `res.json(req.is('*/html'))`, req: JSON_POST('application/json'), expect: { status: 200, body: 'false' } },
  { it: 'req.is() when given */subtype should ignore charset', run: `res.json(req.is('*/json'))`, req: JSON_POST('application/json; charset=UTF-8'), expect: { status: 200, body: '"application/json"' } },
  { it: 'req.is() when given type/* should return the full type when matching', run: `res.json(req.is('application/*'))`, req: JSON_POST('application/json'), expect: { status: 200, body: '"application/json"' } },
  { it: 'req.is() when given type/* should return false when not matching', run: `res.json(req.is('text/*'))`, req: JSON_POST('application/json'), expect: { status: 200, body: 'false' } },
  { it: 'req.is() when given type/* should ignore charset', run: `res.json(req.is('application/*'))`, req: JSON_POST('application/json; charset=UTF-8'), expect: { status: 200, body: '"application/json"' } },
  // req.path.js, req.query.js (the default parser)
  { it: 'req.path should return the parsed pathname', run: `res.end(req.path)`, req: { path: '/login?redirect=/post/1/comments' }, expect: { body: '/login' } },
  { it: 'req.query should default to {}', run: `res.send(req.query)`, expect: { status: 200, body: '{}' } },
  { it: 'req.query should default to parse simple keys', run: `res.send(req.query)`, req: { path: '/?user[name]=tj' }, expect: { status: 200, body: '{"user[name]":"tj"}' } },
  { it: 'req.query when "query parser" is "simple" should not parse complex keys', run: `res.send(req.query)`, req: { path: '/?user%5Bname%5D=tj' }, expect: { status: 200, body: '{"user[name]":"tj"}' } },
  // req.protocol.js, req.secure.js (the cases without 'trust proxy')
  { it: 'req.protocol should return the protocol string', run: `res.end(req.protocol)`, expect: { body: 'http' } },
  { it: 'req.protocol when "trust proxy" is disabled should ignore X-Forwarded-Proto', run: `res.end(req.protocol)`, req: { headers: { 'x-forwarded-proto': 'https' } }, expect: { body: 'http' } },
  { it: 'req.secure when X-Forwarded-Proto is missing should return false when http', run: `res.send(req.secure ? 'yes' : 'no')`, expect: { body: 'no' } },
  { it: 'req.secure when X-Forwarded-Proto is present should return false when http', run: `res.send(req.secure ? 'yes' : 'no')`, req: { headers: { 'x-forwarded-proto': 'https' } }, expect: { body: 'no' } },
  // req.range.js
  { it: 'req.range(size) should return parsed ranges', run: `res.json(req.range(120))`, req: { headers: { range: 'bytes=0-50,51-100' } }, expect: { status: 200, body: '[{"start":0,"end":50},{"start":51,"end":100}]' } },
  { it: 'req.range(size) should cap to the given size', run: `res.json(req.range(75))`, req: { headers: { range: 'bytes=0-100' } }, expect: { status: 200, body: '[{"start":0,"end":74}]' } },
  { it: 'req.range(size) should cap to the given size when open-ended', run: `res.json(req.range(75))`, req: { headers: { range: 'bytes=0-' } }, expect: { status: 200, body: '[{"start":0,"end":74}]' } },
  { it: 'req.range(size) should have a .type', run: `res.json(req.range(120).type)`, req: { headers: { range: 'bytes=0-100' } }, expect: { status: 200, body: '"bytes"' } },
  { it: 'req.range(size) should accept any type', run: `res.json(req.range(120).type)`, req: { headers: { range: 'users=0-2' } }, expect: { status: 200, body: '"users"' } },
  { it: 'req.range(size) should return undefined if no range', run: `res.send(String(req.range(120)))`, expect: { status: 200, body: 'undefined' } },
  { it: 'req.range(size, options) with "combine: true" should return combined ranges', run: `res.json(req.range(120, { combine: true }))`, req: { headers: { range: 'bytes=0-50,51-100' } }, expect: { status: 200, body: '[{"start":0,"end":100}]' } },
  // req.subdomains.js (the default offset, no 'trust proxy')
  { it: 'req.subdomains when present should return an array', run: `res.send(req.subdomains)`, req: { headers: { host: 'tobi.ferrets.example.com' } }, expect: { status: 200, json: ['ferrets', 'tobi'] } },
  { it: 'req.subdomains when present should work with IPv4 address', run: `res.send(req.subdomains)`, req: { headers: { host: '127.0.0.1' } }, expect: { status: 200, json: [] } },
  { it: 'req.subdomains when present should work with IPv6 address', run: `res.send(req.subdomains)`, req: { headers: { host: '[::1]' } }, expect: { status: 200, json: [] } },
  { it: 'req.subdomains otherwise should return an empty array', run: `res.send(req.subdomains)`, req: { headers: { host: 'example.com' } }, expect: { status: 200, json: [] } },
  { it: 'req.subdomains with no host should return an empty array', run: `req.headers.host = null; res.send(req.subdomains)`, expect: { status: 200, json: [] } },
  // req.xhr.js
  { it: 'req.xhr should return true when X-Requested-With is xmlhttprequest', run: `res.send(req.xhr)`, req: { headers: { 'x-requested-with': 'xmlhttprequest' } }, expect: { status: 200, body: 'true' } },
  { it: 'req.xhr should case-insensitive', run: `res.send(req.xhr)`, req: { headers: { 'x-requested-with': 'XMLHttpRequest' } }, expect: { status: 200, body: 'true' } },
  { it: 'req.xhr should return false otherwise', run: `res.send(req.xhr)`, req: { headers: { 'x-requested-with': 'blahblah' } }, expect: { status: 200, body: 'false' } },
  { it: 'req.xhr should return false when not present', run: `res.send(req.xhr)`, expect: { status: 200, body: 'false' } },
];
