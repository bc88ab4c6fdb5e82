import { expect } from 'chai';
import { request as httpRequest } from 'node:http';
import { startRuntime, type RunningRuntime } from './helpers/runtime.ts';

// Every `req` property of the handler contract, through real HTTP against a runtime process.
const ECHO = `
export default function handler(req, res) {
  res.json({
    method: req.method, path: req.path, url: req.url, originalUrl: req.originalUrl,
    query: req.query, params: req.params, headers: req.headers, cookies: req.cookies,
    ip: req.ip, ips: req.ips, protocol: req.protocol, secure: req.secure, xhr: req.xhr,
    hostname: req.hostname, getAuth: req.get('Authorization'), headerCustom: req.header('X-Custom'),
    referrer: req.get('referrer'), isJson: req.is('json'),
    bodyType: req.body === undefined ? 'undefined' : Buffer.isBuffer(req.body) ? 'buffer' : req.body === null ? 'null' : Array.isArray(req.body) ? 'array' : typeof req.body,
    body: Buffer.isBuffer(req.body) ? req.body.toString('base64') : req.body,
  });
}`;

interface Echo {
  method: string;
  path: string;
  url: string;
  originalUrl: string;
  query: Record<string, unknown>;
  params: Record<string, string>;
  headers: Record<string, string>;
  cookies: Record<string, string>;
  ip: string;
  ips: string[];
  protocol: string;
  secure: boolean;
  xhr: boolean;
  hostname: string;
  getAuth: string;
  headerCustom: string;
  referrer: string;
  isJson: string | false;
  bodyType: string;
  body: unknown;
}

describe('runtime: req', function () {
  let rt: RunningRuntime;
  before(async () => {
    rt = await startRuntime({ code: ECHO, routes: ['/users/:userId', '/users/:userId/posts/:postId', '/files/:path*'] });
  });
  after(async () => rt?.stop());

  const call = async (path: string, init: RequestInit = {}): Promise<Echo> => {
    const res = await fetch(rt.url + path, init);
    expect(res.status, await res.clone().text()).to.equal(200);
    return (await res.json()) as Echo;
  };

  it('gives method, path, url and originalUrl; "/" when there is no sub-path', async () => {
    const e = await call('/a/b?x=1', { method: 'PATCH' });
    expect(e).to.include({ method: 'PATCH', path: '/a/b', url: '/a/b?x=1', originalUrl: '/a/b?x=1' });
    expect((await call('/')).path).to.equal('/');
    expect((await call('/?only=query')).path).to.equal('/');
  });

  it('parses the query; a repeated key becomes an array; values are decoded', async () => {
    const e = await call('/?a=1&b=two%20words&a=2&a=3&empty=&flag');
    expect(e.query).to.deep.equal({ a: ['1', '2', '3'], b: 'two words', empty: '', flag: '' });
    expect((await call('/')).query).to.deep.equal({});
  });

  it('fills params from the first matching route pattern, and {} when none matches', async () => {
    expect((await call('/users/42')).params).to.deep.equal({ userId: '42' });
    expect((await call('/users/42/')).params).to.deep.equal({ userId: '42' });
    expect((await call('/users/a%20b/posts/7')).params).to.deep.equal({ userId: 'a b', postId: '7' });
    expect((await call('/files/docs/readme.md')).params).to.deep.equal({ path: 'docs/readme.md' });
    expect((await call('/other/42')).params).to.deep.equal({});
    expect((await call('/users')).params).to.deep.equal({});
  });

  it('passes every header unchanged, Authorization and custom ones included; get()/header() ignore case', async () => {
    const e = await call('/', { headers: { Authorization: 'Bearer secret-Token.123', 'X-Custom': 'Some Value', 'X-Empty': '', Referer: 'https://ref.example/' } });
    expect(e.headers.authorization).to.equal('Bearer secret-Token.123');
    expect(e.headers['x-custom']).to.equal('Some Value');
    expect(e.headers['x-empty']).to.equal('');
    expect(e.getAuth).to.equal('Bearer secret-Token.123');
    expect(e.headerCustom).to.equal('Some Value');
    expect(e.referrer).to.equal('https://ref.example/');
  });

  it('parses cookies', async () => {
    const e = await call('/', { headers: { Cookie: 'session=abc123; theme=dark%20blue; quoted="q v"' } });
    expect(e.cookies).to.deep.equal({ session: 'abc123', theme: 'dark blue', quoted: 'q v' });
    expect((await call('/')).cookies).to.deep.equal({});
  });

  it('takes ip and ips from X-Forwarded-For, protocol and secure from X-Forwarded-Proto, xhr from X-Requested-With', async () => {
    const e = await call('/', { headers: { 'X-Forwarded-For': '203.0.113.7, 10.0.0.2', 'X-Forwarded-Proto': 'https', 'X-Requested-With': 'XMLHttpRequest', 'X-Forwarded-Host': 'fn.example.com:8443' } });
    expect(e).to.include({ ip: '203.0.113.7', protocol: 'https', secure: true, xhr: true, hostname: 'fn.example.com' });
    expect(e.ips).to.deep.equal(['203.0.113.7', '10.0.0.2']);
    const plain = await call('/');
    expect(plain).to.include({ ip: '127.0.0.1', protocol: 'http', secure: false, xhr: false, hostname: '127.0.0.1' });
    expect(plain.ips).to.deep.equal([]);
  });

  describe('body', () => {
    const post = (body: string | Uint8Array<ArrayBuffer>, type?: string) => call('/', { method: 'POST', body, headers: type === undefined ? {} : { 'content-type': type } });

    it('arrives parsed when Content-Type is JSON: objects, arrays, strings, numbers, true, null', async () => {
      expect(await post('{"a":{"b":[1,2]}}', 'application/json')).to.include({ bodyType: 'object', isJson: 'json' }).and.to.have.deep.property('body', { a: { b: [1, 2] } });
      expect(await post('[1,"x"]', 'application/json; charset=utf-8')).to.deep.include({ bodyType: 'array', body: [1, 'x'] });
      expect(await post('"just a string"', 'application/json')).to.deep.include({ bodyType: 'string', body: 'just a string' });
      expect(await post('42.5', 'application/json')).to.deep.include({ bodyType: 'number', body: 42.5 });
      expect(await post('true', 'application/json')).to.deep.include({ bodyType: 'boolean', body: true });
      expect(await post('null', 'application/json')).to.deep.include({ bodyType: 'null', body: null });
      expect(await post('{"v":1}', 'application/vnd.api+json')).to.deep.include({ bodyType: 'object', body: { v: 1 } });
    });

    it('is text for text/*, a Buffer otherwise, undefined when empty', async () => {
      expect(await post('héllo\nworld', 'text/plain')).to.deep.include({ bodyType: 'string', body: 'héllo\nworld' });
      expect(await post('<p>x</p>', 'text/html; charset=utf-8')).to.deep.include({ bodyType: 'string', body: '<p>x</p>' });
      const bytes = new Uint8Array([0, 1, 2, 255]);
      expect(await post(bytes, 'application/octet-stream')).to.deep.include({ bodyType: 'buffer', body: Buffer.from(bytes).toString('base64') });
      expect(await post('', 'application/json')).to.include({ bodyType: 'undefined' });
      expect(await call('/')).to.include({ bodyType: 'undefined' });
    });

    it('answers 400 naming the problem for malformed JSON, before the handler runs', async () => {
      const res = await fetch(rt.url + '/', { method: 'POST', body: '{"a":', headers: { 'content-type': 'application/json' } });
      expect(res.status).to.equal(400);
      const body = (await res.json()) as { error: string; message: string };
      expect(body.error).to.equal('invalid_json');
      expect(body.message).to.match(/not valid JSON/);
      expect(decodeURIComponent(res.headers.get('x-fnhost-error') ?? '')).to.match(/not valid JSON/);
    });

    it('answers 413 for a body over the invocation limit', async () => {
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(rt.url + '/', { method: 'POST', headers: { 'content-length': String(7 * 1024 * 1024) } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).to.equal(413);
    });
  });
});
