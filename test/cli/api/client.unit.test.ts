import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient } from '../../../cli/src/api/client.ts';
import {
  ApiAuthError,
  ApiConflictError,
  ApiConnectionError,
  ApiNotFoundError,
  ApiProtocolError,
  ApiServerError,
  ApiValidationError,
  ApiWrongUrlError,
} from '../../../cli/src/api/errors.ts';

// A stand-in server (unit test): each test sets the answer; requests are recorded.
describe('cli api: client error families', () => {
  let server: Server;
  let url: string;
  let answer: (req: IncomingMessage, res: ServerResponse) => void;
  const seen: Array<{ method?: string; url?: string; auth?: string; body: string }> = [];

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, body });
        answer(req, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** The answer to every request; GET /api/v1/info answers as an API root does unless `info` says otherwise (or `all` is set). */
  function reply(status: number, body: unknown, options: { info?: { status: number; body: unknown }; all?: boolean } = {}) {
    const info = options.info ?? { status: 200, body: { mode: 'local', default_namespace: 'default' } };
    answer = (req, res) => {
      const [s, b] = req.url?.endsWith('/api/v1/info') === true && options.all !== true ? [info.status, info.body] : [status, body];
      res.writeHead(s, { 'content-type': 'application/json' });
      res.end(typeof b === 'string' ? b : JSON.stringify(b));
    };
  }

  async function failure(run: () => Promise<unknown>): Promise<Error> {
    try {
      await run();
    } catch (err) {
      return err as Error;
    }
    throw new Error('expected a failure');
  }

  it('sends the bearer token, the query and JSON bodies', async () => {
    reply(200, { logs: [], pagination: {} });
    await new ApiClient({ url, token: 'secret' }).listLogs('hello', { status: 'error', limit: 5, page: 2 });
    expect(seen.at(-1)).to.include({ method: 'GET', url: '/api/v1/functions/hello/logs?status=error&limit=5&page=2', auth: 'Bearer secret' });
    reply(200, {});
    await new ApiClient({ url, token: 'secret' }).setRetention('hello', { type: 'time', days: 7 });
    expect(seen.at(-1)).to.include({ method: 'PUT', url: '/api/v1/functions/hello/retention', body: '{"type":"time","days":7}' });
  });

  it('maps each status family to its error class and exit code', async () => {
    const client = new ApiClient({ url, token: 'bad', tokenSource: '--token' });
    reply(401, { error: 'unauthorized', message: 'missing or wrong token' });
    const auth = await failure(() => client.listFunctions());
    expect(auth).to.be.instanceOf(ApiAuthError);
    expect(auth.message).to.equal(`the server at ${url} rejected the token from --token (missing or wrong token)`);
    reply(403, { error: 'function_inactive', message: 'function x is inactive' });
    expect(await failure(() => client.getFunction('x'))).to.be.instanceOf(ApiConflictError).with.property('message', 'function x is inactive');
    reply(403, { error: 'forbidden', message: 'not allowed' });
    expect(await failure(() => client.getFunction('x'))).to.be.instanceOf(ApiAuthError);
    reply(404, { error: 'not_found', message: 'no function' });
    const missing = await failure(() => client.getFunction('nope'));
    expect(missing).to.be.instanceOf(ApiNotFoundError);
    expect(missing.message).to.equal(`function "nope" not found at ${url}`);
    reply(400, { error: 'invalid_argument', message: 'cron is wrong' });
    expect(await failure(() => client.setSchedule('x', { cron: 'x' }))).to.be.instanceOf(ApiValidationError).with.property('message', 'cron is wrong');
    reply(409, { error: 'conflict', message: 'name taken' });
    expect(await failure(() => client.createFunction({ name: 'x', code: 'x' }))).to.be.instanceOf(ApiConflictError);
    reply(503, { error: 'store_unavailable', message: 'down' });
    expect(await failure(() => client.listFunctions())).to.be.instanceOf(ApiServerError).with.property('exitCode', 1);
    reply(200, '<html>');
    expect(await failure(() => client.listFunctions())).to.be.instanceOf(ApiProtocolError);
  });

  it("asks the gateway's mode at GET /api/v1/info; a gateway without it (404) is one machine", async () => {
    reply(200, { mode: 'cluster', default_namespace: 'fnhost-apps' }, { all: true });
    expect(await new ApiClient({ url, token: 't', namespace: 'team-a' }).serverInfo()).to.deep.equal({ mode: 'cluster', default_namespace: 'fnhost-apps' });
    expect(seen.at(-1)).to.include({ method: 'GET', url: '/api/v1/info', auth: 'Bearer t' });
    reply(200, { mode: 'local', default_namespace: 'default' }, { all: true });
    expect(await new ApiClient({ url, token: 't' }).serverInfo()).to.deep.equal({ mode: 'local', default_namespace: 'default' });
    reply(404, { error: 'not_found', message: 'no route' }, { all: true });
    expect(await new ApiClient({ url, token: 't' }).serverInfo()).to.deep.equal({ mode: 'local' });
    reply(401, { error: 'unauthorized', message: 'the token is wrong' }, { all: true });
    expect(await failure(() => new ApiClient({ url, token: 'bad' }).serverInfo())).to.be.instanceOf(ApiAuthError);
  });

  it('says where the namespace came from when a function is not found in it', async () => {
    reply(404, { error: 'not_found', message: 'function "hello" not found in namespace "team-a"' });
    const err = (await failure(() => new ApiClient({ url, token: 't', namespace: 'team-a', namespaceSource: 'the kube context "dev" (/k)' }).getFunction('hello'))) as ApiNotFoundError;
    expect(err.message).to.equal(`function "hello" not found in namespace team-a at ${url}`);
    expect(err.hint).to.equal('the namespace came from the kube context "dev" (/k); run fnhost function:list to see its functions, or pass --namespace');
    const plain = (await failure(() => new ApiClient({ url, token: 't' }).getFunction('hello'))) as ApiNotFoundError;
    expect(plain.hint).to.equal('run fnhost function:list to see the functions');
  });

  it('reads a 404 as "not found" only from an API root: another URL is named as the wrong one', async () => {
    // FNHOST_URL=http://host:8080/admin: every path 404s, /api/v1/info too.
    reply(404, { error: 'not_found', message: 'no route GET /admin/api/v1/functions/hello' }, { info: { status: 404, body: { error: 'not_found', message: 'no route GET /admin/api/v1/info' } } });
    const admin = (await failure(() => new ApiClient({ url: `${url}/admin`, urlSource: 'FNHOST_URL', token: 't' }).getFunction('hello'))) as ApiWrongUrlError;
    expect(admin).to.be.instanceOf(ApiWrongUrlError).with.property('exitCode', 2);
    expect(admin.message).to.equal(`${url}/admin (from FNHOST_URL) is not the root of an fnhost API: GET /api/v1/info there answered 404 (no route GET /admin/api/v1/info)`);
    expect(admin.hint).to.equal(`use the gateway's root URL, ${url}: the API is at /api/v1 there (the path /admin is not part of it)`);
    expect(seen.at(-1)).to.include({ method: 'GET', url: '/admin/api/v1/info', auth: 'Bearer t' });
    // Another server on the root (the admin panel's port, any web server): told to use the main port.
    reply(404, 'Not Found', { info: { status: 200, body: '<!doctype html>' } });
    const other = (await failure(() => new ApiClient({ url, token: 't' }).listLogs('hello', { status: 'all', limit: 1, page: 1 }))) as ApiWrongUrlError;
    expect(other).to.be.instanceOf(ApiWrongUrlError);
    expect(other.message).to.equal(`${url} is not the root of an fnhost API: GET /api/v1/info there answered 200 (not the fnhost API)`);
    expect(other.hint).to.equal("use the gateway's main URL (its PORT), not the admin panel's (FNHOST_ADMIN_PORT, by default PORT+1)");
    // A root that refuses the token at /api/v1/info is still a root: the 404 stands.
    reply(404, { error: 'not_found', message: 'no function' }, { info: { status: 401, body: { error: 'unauthorized', message: 'wrong token' } } });
    expect(await failure(() => new ApiClient({ url, token: 't' }).getFunction('nope'))).to.be.instanceOf(ApiNotFoundError);
  });

  it('names the URL it cannot reach, keeping the cause', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const err = await failure(() => new ApiClient({ url: `http://127.0.0.1:${port}`, token: 't' }).listFunctions());
    expect(err).to.be.instanceOf(ApiConnectionError);
    expect(err.message).to.equal(`cannot reach the fnhost server at http://127.0.0.1:${port} (ECONNREFUSED)`);
    expect((err.cause as { code?: string }).code).to.equal('ECONNREFUSED');
  });
});
