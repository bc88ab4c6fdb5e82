import { expect } from 'chai';
import { MONGODB_UNREACHABLE_HINT, openMongoStoresPatiently } from '../../core/src/store/mongo/open-patiently.ts';

// The gateway and the operator on Kubernetes wait for MongoDB, saying why at
// every attempt, instead of exiting (a crash loop whose last line is a driver error).

describe('core: opening MongoDB patiently', () => {
  it('logs each failed attempt as a JSON error record naming the redacted URL and where to look, reports the reason, and keeps waiting', async () => {
    const records: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
    const log = {
      info: (msg: string, fields?: Record<string, unknown>) => records.push({ level: 'info', msg, fields }),
      warn: (msg: string, fields?: Record<string, unknown>) => records.push({ level: 'warn', msg, fields }),
      error: (msg: string, fields?: Record<string, unknown>) => records.push({ level: 'error', msg, fields }),
    };
    const reasons: Array<string | undefined> = [];
    let pauses = 0;
    const stop = new Error('test: stop waiting');
    const err = await openMongoStoresPatiently({
      // Nothing listens on port 1: each attempt is refused at once.
      url: 'mongodb://fnhost:s3cret-password@127.0.0.1:1/fnhost',
      serverSelectionTimeoutMS: 100,
      retry: { retryForMs: 200, initialDelayMs: 10, maxDelayMs: 20 },
      log,
      onWaiting: (reason) => reasons.push(reason),
      pauseMs: 1,
      sleep: async () => {
        if (++pauses === 2) throw stop;
      },
    }).then(() => null, (e: unknown) => e);
    expect(err).to.equal(stop);
    const failures = records.filter((r) => r.msg === 'cannot reach MongoDB; waiting for it');
    expect(failures).to.have.length(2);
    expect(failures[0]!.level).to.equal('error');
    expect(failures[0]!.fields).to.include({ mongodb: 'mongodb://fnhost:***@127.0.0.1:1/fnhost', attempt: 1, hint: MONGODB_UNREACHABLE_HINT });
    expect(failures[1]!.fields).to.include({ attempt: 2 });
    expect(reasons).to.have.length(2);
    expect(reasons[0]).to.match(/^MongoDB unreachable at mongodb:\/\/fnhost:\*\*\*@127\.0\.0\.1:1\/fnhost: /);
    // The driver's retries went through the same logger, as structured records.
    expect(records.some((r) => r.level === 'warn' && r.msg === 'MongoDB unreachable; retrying')).to.equal(true);
    expect(JSON.stringify(records)).not.to.contain('s3cret-password');
  });

  it('refuses a URL that is not MongoDB at once (no waiting for a setting that cannot work)', async () => {
    const err = await openMongoStoresPatiently({ url: 'postgres://x', log: { info() {}, warn() {}, error() {} }, sleep: async () => { throw new Error('must not wait'); } }).then(() => null, (e: unknown) => e as Error);
    expect(err?.message).to.contain('MONGODB_URL must start with mongodb://');
  });
});
