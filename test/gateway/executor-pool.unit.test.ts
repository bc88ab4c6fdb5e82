import { expect } from 'chai';
import type { FunctionRecord } from '@fnhost/core';
import { poolable } from '../../gateway/src/executor/local.ts';
import { warmPoolSize } from '../../gateway/src/executor/pool.ts';

describe('gateway warm pool: pure parts', () => {
  it('FNHOST_WARM_POOL: default 1, 0 turns it off, anything else but 0..16 is refused naming the value', () => {
    expect(warmPoolSize(undefined)).to.equal(1);
    expect(warmPoolSize('')).to.equal(1);
    expect(warmPoolSize('0')).to.equal(0);
    expect(warmPoolSize('3')).to.equal(3);
    for (const bad of ['lots', '-1', '1.5', '17']) expect(() => warmPoolSize(bad), bad).to.throw(`FNHOST_WARM_POOL="${bad}" must be an integer from 0 to 16`);
  });

  it('a function setting a variable read only at process start is not served by a generic runtime', () => {
    const fn = (env: Record<string, string>) => ({ env }) as unknown as FunctionRecord;
    expect(poolable(fn({}))).to.equal(true);
    expect(poolable(fn({ TZ: 'Europe/Paris', HOME: '/tmp', GREETING: 'hi', NODE: 'x', LCX: '1' }))).to.equal(true);
    for (const name of ['NODE_OPTIONS', 'NODE_EXTRA_CA_CERTS', 'UV_THREADPOOL_SIZE', 'OPENSSL_CONF', 'SSL_CERT_FILE', 'LD_PRELOAD', 'MALLOC_ARENA_MAX', 'LANG', 'LC_ALL']) {
      expect(poolable(fn({ [name]: '1' })), name).to.equal(false);
    }
  });
});
