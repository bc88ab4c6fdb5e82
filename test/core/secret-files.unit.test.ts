import { expect } from 'chai';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_SECRET_FILE_BYTES, resolveSecretFiles, SecretFileError } from '../../core/src/secret-files.ts';

describe('secret settings from files (NAME_FILE)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-secret-files-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: string | Buffer) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  it("reads NAME from NAME_FILE, dropping one trailing line break, and leaves the caller's env alone", () => {
    const env = { MONGODB_URL_FILE: file('url', 'mongodb://u:p@db:27017/fnhost\n'), OTHER: 'x' };
    const out = resolveSecretFiles(env, ['MONGODB_URL', 'FNHOST_TOKEN']);
    expect(out.MONGODB_URL).to.equal('mongodb://u:p@db:27017/fnhost');
    expect(out.OTHER).to.equal('x');
    expect(out.FNHOST_TOKEN).to.equal(undefined);
    expect(env).to.not.have.property('MONGODB_URL');
  });

  it('keeps a value that is set directly when no file is named', () => {
    expect(resolveSecretFiles({ FNHOST_TOKEN: 'direct-token-value' }, ['FNHOST_TOKEN']).FNHOST_TOKEN).to.equal('direct-token-value');
  });

  it('only the names asked for: another *_FILE variable is not read', () => {
    const out = resolveSecretFiles({ SOMETHING_FILE: file('other', 'v') }, ['FNHOST_TOKEN']);
    expect(out).to.not.have.property('SOMETHING');
  });

  it('refuses both NAME and NAME_FILE, naming both and not the value', () => {
    const call = () => resolveSecretFiles({ FNHOST_TOKEN: 'the-secret-value', FNHOST_TOKEN_FILE: file('t', 'other') }, ['FNHOST_TOKEN']);
    expect(call).to.throw(SecretFileError, 'FNHOST_TOKEN and FNHOST_TOKEN_FILE are both set');
    expect(call).to.not.throw(/the-secret-value/);
  });

  it('a missing file, a folder, an empty file and an oversized file are errors naming the variable and the path', () => {
    const missing = join(dir, 'nope');
    expect(() => resolveSecretFiles({ FNHOST_TOKEN_FILE: missing }, ['FNHOST_TOKEN'])).to.throw(SecretFileError, `FNHOST_TOKEN_FILE=${missing} cannot be read (ENOENT)`);
    const folder = join(dir, 'folder');
    mkdirSync(folder);
    expect(() => resolveSecretFiles({ FNHOST_TOKEN_FILE: folder }, ['FNHOST_TOKEN'])).to.throw(SecretFileError, `FNHOST_TOKEN_FILE=${folder} is not a regular file`);
    const empty = file('empty', '\n');
    expect(() => resolveSecretFiles({ FNHOST_TOKEN_FILE: empty }, ['FNHOST_TOKEN'])).to.throw(SecretFileError, `FNHOST_TOKEN_FILE=${empty} is empty`);
    const big = file('big', Buffer.alloc(MAX_SECRET_FILE_BYTES + 1, 'a'));
    expect(() => resolveSecretFiles({ FNHOST_TOKEN_FILE: big }, ['FNHOST_TOKEN'])).to.throw(SecretFileError, /is larger than 65536 bytes/);
  });

  it('a device is refused without being read (a read of /dev/zero would never end)', () => {
    expect(() => resolveSecretFiles({ FNHOST_TOKEN_FILE: '/dev/zero' }, ['FNHOST_TOKEN'])).to.throw(SecretFileError, 'FNHOST_TOKEN_FILE=/dev/zero is not a regular file');
  });
});
