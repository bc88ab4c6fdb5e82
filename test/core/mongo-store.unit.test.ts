import { expect } from 'chai';
import { MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import { ConflictError, StoreError } from '../../core/src/errors.ts';
import { backoffDelay, bucketsFrom, dbNameFromUrl, isConnectionError, minuteOf, planPage, prefixPattern, redactUrl, runWithRetry, statusClass, type RetryOptions } from '../../core/src/store/mongo/index.ts';

// The MongoDB store's pure helpers and its retry loop (fake clock and sleep).

describe('MongoDB store helpers', () => {
  describe('planPage', () => {
    it('reads pages in the first half forward from the newest', () => {
      expect(planPage(100, 10, 1)).to.deep.equal({ skip: 0, take: 10, reverse: false });
      expect(planPage(100, 10, 5)).to.deep.equal({ skip: 40, take: 10, reverse: false });
    });

    it('reads pages past the middle backward from the oldest, never skipping more than half', () => {
      expect(planPage(100, 10, 10)).to.deep.equal({ skip: 0, take: 10, reverse: true });
      expect(planPage(100, 10, 7)).to.deep.equal({ skip: 30, take: 10, reverse: true });
      // A short last page: the 3 oldest records.
      expect(planPage(23, 10, 3)).to.deep.equal({ skip: 0, take: 3, reverse: true });
      for (const [total, limit] of [[1_000_000, 50], [23, 7], [5, 1]] as const) {
        for (let page = 1; page <= Math.ceil(total / limit); page += Math.max(1, Math.floor(total / limit / 50))) {
          const plan = planPage(total, limit, page)!;
          expect(plan.skip).to.be.at.most(total / 2);
          // The same records either way: newest-first offset of the first record on the page.
          const offset = plan.reverse ? total - plan.skip - plan.take : plan.skip;
          expect(offset).to.equal((page - 1) * limit);
          expect(plan.take).to.equal(Math.min(limit, total - offset));
        }
      }
    });

    it('gives null for a page past the end and for no records', () => {
      expect(planPage(100, 10, 11)).to.equal(null);
      expect(planPage(0, 50, 1)).to.equal(null);
    });
  });

  it('statusClass: 2xx success, 400 and above error, the rest other', () => {
    expect([100, 199, 200, 299, 300, 399, 400, 500, 599].map(statusClass)).to.deep.equal(['o', 'o', 's', 's', 'o', 'o', 'e', 'e', 'e']);
  });

  it('minuteOf floors to the minute', () => {
    const t = Date.UTC(2100, 0, 1, 10, 30);
    expect(minuteOf(t)).to.equal(t);
    expect(minuteOf(t + 59_999)).to.equal(t);
    expect(minuteOf(t + 60_000)).to.equal(t + 60_000);
  });

  it('prefixPattern takes the prefix literally', () => {
    const prefix = 'user:[a]*?.+(x)|$^\\';
    const re = new RegExp(prefixPattern(prefix));
    expect(re.test(prefix + 'tail')).to.equal(true);
    expect(re.test('user:a')).to.equal(false);
    expect(re.test('x' + prefix)).to.equal(false);
  });

  it('redactUrl hides the password; dbNameFromUrl reads the path', () => {
    expect(redactUrl('mongodb://fnhost:s3cret@db.example:27017/fnhost?tls=true')).to.equal('mongodb://fnhost:***@db.example:27017/fnhost?tls=true');
    expect(redactUrl('mongodb://127.0.0.1:27017')).to.equal('mongodb://127.0.0.1:27017');
    expect(dbNameFromUrl('mongodb+srv://u:p@cluster.example/prod?retryWrites=true')).to.equal('prod');
    expect(dbNameFromUrl('mongodb://127.0.0.1:27017/')).to.equal(null);
    expect(dbNameFromUrl('mongodb://127.0.0.1:27017')).to.equal(null);
  });

  it('backoff doubles from the first delay up to the cap', () => {
    const options = { initialDelayMs: 100, maxDelayMs: 1000 };
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, options))).to.deep.equal([100, 200, 400, 800, 1000, 1000]);
  });

  it('isConnectionError: server selection always; network errors only for operations that may be sent twice', () => {
    const selection = new MongoServerSelectionError('no server', { type: 'Unknown', servers: new Map() } as never);
    const network = new MongoNetworkError('connection reset');
    expect(isConnectionError(selection, false)).to.equal(true);
    expect(isConnectionError(network, true)).to.equal(true);
    expect(isConnectionError(network, false)).to.equal(false);
    expect(isConnectionError(new MongoServerError({ message: 'bad', code: 2 }), true)).to.equal(false);
    expect(isConnectionError(new Error('x'), true)).to.equal(false);
  });
});

describe('MongoDB store runWithRetry', () => {
  function fakeOptions(): RetryOptions & { slept: number[]; lines: string[] } {
    let clock = 0;
    const slept: number[] = [];
    const lines: string[] = [];
    return {
      retryForMs: 1000,
      initialDelayMs: 100,
      maxDelayMs: 400,
      log: (msg, fields) => lines.push(JSON.stringify({ msg, ...fields })),
      sleep: async (ms) => {
        slept.push(ms);
        clock += ms;
      },
      now: () => clock,
      slept,
      lines,
    };
  }

  it('retries a network failure with backoff, logging each, and returns the eventual result', async () => {
    const options = fakeOptions();
    let calls = 0;
    const result = await runWithRetry('kv get', true, async () => {
      if (++calls < 4) throw new MongoNetworkError('connection refused');
      return 'value';
    }, options);
    expect(result).to.equal('value');
    expect(options.slept).to.deep.equal([100, 200, 400]);
    expect(options.lines).to.have.length(3);
    expect(JSON.parse(options.lines[0]!)).to.deep.equal({ msg: 'MongoDB unreachable; retrying', operation: 'kv get', error: 'MongoNetworkError: connection refused', retry: 1, retry_in_ms: 100 });
  });

  it('gives up after retryForMs with StoreError naming the attempts, the cause attached', async () => {
    const options = fakeOptions();
    const cause = new MongoNetworkError('connection refused');
    const err = await runWithRetry('log list', true, async () => { throw cause; }, options).then(() => null, (e: unknown) => e);
    expect(err).to.be.instanceOf(StoreError);
    expect((err as StoreError).message).to.match(/^MongoDB log list failed after \d+ attempts over \d+ ms: connection refused$/);
    expect((err as StoreError).cause).to.equal(cause);
    expect(options.slept.reduce((a, b) => a + b, 0)).to.be.at.least(1000);
  });

  it('does not retry a non-idempotent write after a network error, nor a server error', async () => {
    for (const [idempotent, error] of [[false, new MongoNetworkError('reset')], [true, new MongoServerError({ message: 'E11000', code: 11000 })]] as const) {
      const options = fakeOptions();
      let calls = 0;
      const err = await runWithRetry('counter add', idempotent, async () => { calls++; throw error; }, options).then(() => null, (e: unknown) => e);
      expect(err).to.be.instanceOf(StoreError);
      expect((err as StoreError).cause).to.equal(error);
      expect(calls).to.equal(1);
      expect(options.slept).to.deep.equal([]);
    }
  });

  it('passes domain errors through unchanged', async () => {
    const conflict = new ConflictError('taken');
    const err = await runWithRetry('function create', true, async () => { throw conflict; }, fakeOptions()).then(() => null, (e: unknown) => e);
    expect(err).to.equal(conflict);
  });
});

describe('MongoDB store bucketsFrom', () => {
  const MINUTE = 60_000;
  const HOUR = 3_600_000;
  const DAY = 86_400_000;

  it('covers every minute from the boundary on exactly once: minutes to the hour, hours to the day, then days', () => {
    const t0 = Date.UTC(2100, 0, 1);
    for (const from of [t0, t0 + 17 * MINUTE, t0 + 5 * HOUR, t0 + 5 * HOUR + 59 * MINUTE, t0 + DAY - MINUTE]) {
      const ranges = bucketsFrom(from);
      // Every minute within the next three days is in exactly one bucket; none before `from` is.
      for (let m = from - 2 * HOUR; m < from + 3 * DAY; m += MINUTE) {
        const holders = ranges.filter((r) => {
          const start = Math.floor(m / r.span) * r.span;
          return start >= r.start.$gte && (r.start.$lt === undefined || start < r.start.$lt);
        });
        expect(holders.length, `minute ${(m - from) / MINUTE} from ${from - t0}`).to.equal(m >= from ? 1 : 0);
      }
      // At most 59 minutes and 23 hours before whole days.
      expect((ranges[0]!.start.$lt! - ranges[0]!.start.$gte) / MINUTE).to.be.at.most(59);
      expect((ranges[1]!.start.$lt! - ranges[1]!.start.$gte) / HOUR).to.be.at.most(23);
    }
  });
});
