import { expect } from 'chai';
import { mkdtemp, mkdir, rm, stat, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConnection } from '../../../cli/src/config/connection.ts';
import { readLogin, writeLogin } from '../../../cli/src/config/login-file.ts';
import { loginFilePath } from '../../../cli/src/config/paths.ts';

describe('cli config: connection resolution and the login file', () => {
  let dir: string;
  let env: Record<string, string | undefined>;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-cli-config-'));
    env = { XDG_CONFIG_HOME: join(dir, 'config') };
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('falls back to the local platform and its token file', async () => {
    await mkdir(join(dir, '.fnhost'));
    await writeFile(join(dir, '.fnhost', 'token'), 'local-token\n');
    const c = await resolveConnection({ flags: {}, env, cwd: dir, home: dir });
    expect(c).to.include({ url: 'http://127.0.0.1:8080', token: 'local-token' });
  });

  it('prefers flags, then the environment, then the saved login', async () => {
    await writeLogin(loginFilePath(env), { url: 'https://saved.example', token: 'saved' });
    expect(await resolveConnection({ flags: {}, env, cwd: dir })).to.include({ url: 'https://saved.example', token: 'saved' });
    env.FNHOST_URL = 'http://127.0.0.1:9000/';
    env.FNHOST_TOKEN = 'env';
    expect(await resolveConnection({ flags: {}, env, cwd: dir })).to.include({ url: 'http://127.0.0.1:9000', token: 'env' });
    expect(await resolveConnection({ flags: { url: 'http://127.0.0.1:7000', token: 'flag' }, env, cwd: dir })).to.include({
      url: 'http://127.0.0.1:7000',
      token: 'flag',
    });
  });

  it('never sends the saved token to another server', async () => {
    await writeLogin(loginFilePath(env), { url: 'https://saved.example', token: 'saved' });
    const c = await resolveConnection({ flags: { url: 'https://other.example' }, env, cwd: dir });
    expect(c.token).to.equal(undefined);
  });

  it('names a bad URL', async () => {
    env.FNHOST_URL = 'not a url';
    await resolveConnection({ flags: {}, env, cwd: dir }).then(
      () => expect.fail('expected an error'),
      (err: Error) => expect(err.message).to.equal('FNHOST_URL "not a url" is not a URL; expected something like http://127.0.0.1:8080'),
    );
  });

  it('writes the login file with mode 0600 and reads it back', async () => {
    const path = loginFilePath(env);
    await writeLogin(path, { url: 'http://127.0.0.1:1', token: 't' });
    expect((await stat(path)).mode & 0o777).to.equal(0o600);
    expect(await readLogin(path)).to.deep.equal({ url: 'http://127.0.0.1:1', token: 't' });
    expect(JSON.parse(await readFile(path, 'utf8'))).to.deep.equal({ url: 'http://127.0.0.1:1', token: 't' });
  });

  it('uses ~/.config without XDG_CONFIG_HOME', () => {
    expect(loginFilePath({}, '/home/ada')).to.equal('/home/ada/.config/fnhost/config.json');
  });

  it('names a damaged login file', async () => {
    const path = loginFilePath(env);
    await mkdir(join(dir, 'config', 'fnhost'), { recursive: true });
    await writeFile(path, '{');
    await readLogin(path).then(
      () => expect.fail('expected an error'),
      (err: Error) => expect(err.message).to.equal(`the login file ${path} is not valid JSON`),
    );
  });
});
