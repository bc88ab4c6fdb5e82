import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../../../cli/src/api/client.ts';
import { resolveConnection } from '../../../cli/src/config/connection.ts';
import { readLogin, writeLogin } from '../../../cli/src/config/login-file.ts';
import { loginFilePath } from '../../../cli/src/config/paths.ts';

describe('cli: --namespace (functions on a cluster)', () => {
  let dir: string;
  let env: Record<string, string | undefined>;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-cli-ns-'));
    env = { XDG_CONFIG_HOME: join(dir, 'config') };
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('takes the namespace from --namespace, then FNHOST_NAMESPACE, then the saved login (for its server only), else none', async () => {
    expect((await resolveConnection({ flags: {}, env, cwd: dir })).namespace).to.equal(undefined);
    await writeLogin(loginFilePath(env), { url: 'https://fn.example', token: 't', namespace: 'team-a' });
    expect(await readLogin(loginFilePath(env))).to.deep.equal({ url: 'https://fn.example', token: 't', namespace: 'team-a' });
    expect((await resolveConnection({ flags: {}, env, cwd: dir })).namespace).to.equal('team-a');
    expect((await resolveConnection({ flags: { url: 'https://other.example' }, env, cwd: dir })).namespace, "another server does not get the login's namespace").to.equal(undefined);
    env.FNHOST_NAMESPACE = 'team-b';
    expect((await resolveConnection({ flags: {}, env, cwd: dir })).namespace).to.equal('team-b');
    expect((await resolveConnection({ flags: { namespace: 'team-c' }, env, cwd: dir })).namespace).to.equal('team-c');
  });

  it('names a bad namespace and where it came from', async () => {
    await resolveConnection({ flags: { namespace: 'Team_A' }, env, cwd: dir }).then(
      () => expect.fail('expected an error'),
      (err: Error) => expect(err.message).to.equal('--namespace "Team_A" is not a namespace name: lowercase letters, digits and "-", at most 63 characters'),
    );
    env.FNHOST_NAMESPACE = 'x'.repeat(64);
    await resolveConnection({ flags: {}, env, cwd: dir }).then(
      () => expect.fail('expected an error'),
      (err: Error) => expect(err.message).to.match(/^FNHOST_NAMESPACE "x+" is not a namespace name/),
    );
  });

  it('sends ?namespace= on function and function-policy requests only', async () => {
    const seen: string[] = [];
    const server: Server = createServer((req, res) => {
      seen.push(req.url!);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"functions":[],"logs":[],"pagination":{}}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const client = new ApiClient({ url, token: 't', namespace: 'team-a' });
      await client.listFunctions();
      await client.listLogs('hello', { status: 'all', limit: 50, page: 1 });
      await client.getFunction('hello');
      await new ApiClient({ url, token: 't' }).getFunction('hello');
      expect(seen).to.deep.equal([
        '/api/v1/functions?namespace=team-a',
        '/api/v1/functions/hello/logs?status=all&limit=50&page=1&namespace=team-a',
        '/api/v1/functions/hello?namespace=team-a',
        '/api/v1/functions/hello',
      ]);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
