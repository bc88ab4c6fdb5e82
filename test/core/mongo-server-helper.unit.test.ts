import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { buildMongoServer } from '../helpers/mongo-server.ts';

// The stand-in's build step on a machine without Java or Maven: a clear
// message naming the tool and the way out, not a spawn error.

describe('MongoDB stand-in build without java/mvn', () => {
  let cache: string;
  const saved = { path: process.env['PATH'], cache: process.env['FNHOST_CACHE'] };

  beforeEach(() => {
    cache = mkdtempSync(join(tmpdir(), 'fnhost-mongo-cache-'));
    process.env['FNHOST_CACHE'] = cache;
    process.env['PATH'] = join(cache, 'empty-bin');
  });

  afterEach(() => {
    process.env['PATH'] = saved.path;
    if (saved.cache === undefined) delete process.env['FNHOST_CACHE'];
    else process.env['FNHOST_CACHE'] = saved.cache;
    rmSync(cache, { recursive: true, force: true });
  });

  it('fails naming java and MONGODB_URL when no build is cached and java is not on PATH', () => {
    expect(() => buildMongoServer()).to.throw(/needs `java` \(Java 17\+ and Maven\) on PATH, or set MONGODB_URL/);
  });
});
