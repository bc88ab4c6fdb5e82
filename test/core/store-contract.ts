import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { ConflictError, NotFoundError } from '../../core/src/errors.ts';
import type { ExecutionLog, FunctionRecord, LogPage, LogQuery, NetworkPolicy, RetentionPolicy, StatusFilter } from '../../core/src/model.ts';
import type { StoredLog, StoredScheduleRun, StoredSession, Stores } from '../../core/src/stores.ts';
import { describeInsightContract } from './insight-contract.ts';
import { describeKvQuotaContract } from './kv-quota-contract.ts';
import type { FunctionIdHome } from '../../core/src/function-id-home.ts';

// The one contract every store implements (core/src/stores.ts), registered as
// mocha tests: `describeStoreContract('SQLite', () => open...)`. It is
// store-agnostic: each test works on fresh random function ids and namespaces,
// so a store may be shared between tests or opened fresh each time.
//
// Clocks: every `now` is injected. The tests' clock starts in the year 2100,
// so a store whose server also expires documents on the real clock (a MongoDB
// TTL index) never removes anything behind the test's back.

export interface StoreContractOptions {
  /** mocha timeout per test (ms); slow servers may need more. */
  timeoutMs?: number;
  /**
   * Set when the store may also delete expired KV keys or logs in the
   * background on the real clock; sweep()/applyRetention() counts are then
   * asserted as upper bounds rather than exact numbers. (The year-2100 clock
   * keeps this from mattering in practice.)
   */
  expiresInBackground?: boolean;
}

const DAY = 86_400_000;
/** 2100-01-01T00:00:00.000Z: far past any real clock a TTL monitor uses. */
export const CONTRACT_EPOCH = Date.UTC(2100, 0, 1);

export function describeStoreContract(name: string, open: () => Promise<Stores>, options: StoreContractOptions = {}): void {
  describe(`store contract: ${name}`, function () {
    if (options.timeoutMs !== undefined) this.timeout(options.timeoutMs);
    let stores: Stores;

    beforeEach(async () => {
      stores = await open();
    });

    afterEach(async () => {
      await stores.close();
    });

    /** Asserts an exact count, or at most when the store may expire things in the background. */
    function expectDeleted(actual: number, expected: number): void {
      if (options.expiresInBackground) expect(actual).to.be.within(0, expected);
      else expect(actual).to.equal(expected);
    }

    describe('FunctionIdHomeStore', () => {
      const home = (fields: Partial<FunctionIdHome> = {}): FunctionIdHome => ({ function_id: randomUUID(), namespace: `team-${randomBytes(3).toString('hex')}`, name: 'hello', how: 'derived', at: CONTRACT_EPOCH, ...fields });

      it('a first claim is stored and read back; a later claim of the same id keeps the first home and returns it', async () => {
        const first = home();
        expect(await stores.homes.get(first.function_id)).to.equal(null);
        expect(await stores.homes.claim(first)).to.deep.equal(first);
        const rival = { ...first, namespace: 'team-b', name: 'taker', how: 'claimed' as const, at: CONTRACT_EPOCH + 5 };
        expect(await stores.homes.claim(rival)).to.deep.equal(first);
        expect(await stores.homes.get(first.function_id)).to.deep.equal(first);
      });

      it('of claims racing on one id, one home is stored and every claim returns it', async () => {
        const id = randomUUID();
        const answers = await Promise.all(['a', 'b', 'c', 'd'].map((n) => stores.homes.claim(home({ function_id: id, namespace: `ns-${n}`, name: n }))));
        const stored = await stores.homes.get(id);
        expect(stored).to.not.equal(null);
        for (const a of answers) expect(a).to.deep.equal(stored);
      });

      it('a move happens only from the namespace the home is in now (compare and set); an id with no home does not move', async () => {
        const first = await stores.homes.claim(home());
        const to = { ...first, namespace: 'team-b', name: 'moved', how: 'moved' as const, at: CONTRACT_EPOCH + 10 };
        expect(await stores.homes.move('team-elsewhere', to)).to.deep.equal(first);
        expect(await stores.homes.move(first.namespace, to)).to.deep.equal(to);
        expect(await stores.homes.get(first.function_id)).to.deep.equal(to);
        // The same move again (a resend) changes nothing.
        expect(await stores.homes.move(first.namespace, { ...to, namespace: 'team-c' })).to.deep.equal(to);
        const none = home();
        expect(await stores.homes.move(none.namespace, none)).to.equal(null);
        expect(await stores.homes.get(none.function_id)).to.equal(null);
      });
    });

    describe('FunctionStore', () => {
      it('creates a function and reads it back by id and by name, unchanged', async () => {
        const fn = functionRecord({ env: { LOG_LEVEL: 'debug', 'ÜNICODE': 'é✓' }, routes: ['/users/:userId'], schedule: { cron: '0 9 * * 1', timezone: 'Europe/Paris', enabled: true }, retention: { type: 'count', count: 7 } });
        await stores.functions.create(fn);
        expect(await stores.functions.get(fn.function_id)).to.deep.equal(fn);
        expect(await stores.functions.getByName(fn.namespace, fn.name)).to.deep.equal(fn);
      });

      it('returns null for a missing id or name', async () => {
        const fn = functionRecord();
        await stores.functions.create(fn);
        expect(await stores.functions.get(randomUUID())).to.equal(null);
        expect(await stores.functions.getByName(fn.namespace, 'no-such-function')).to.equal(null);
        expect(await stores.functions.getByName('other-' + fn.namespace, fn.name)).to.equal(null);
      });

      it('rejects a taken (namespace, name) with ConflictError, and allows the name in another namespace', async () => {
        const fn = functionRecord();
        await stores.functions.create(fn);
        const sameName = functionRecord({ name: fn.name, namespace: fn.namespace });
        const err = await rejectionOf(stores.functions.create(sameName));
        expect(err).to.be.instanceOf(ConflictError);
        expect((err as Error).message).to.include(fn.name);
        expect(await stores.functions.get(sameName.function_id)).to.equal(null);
        const elsewhere = functionRecord({ name: fn.name, namespace: 'x' + fn.namespace });
        await stores.functions.create(elsewhere);
        expect(await stores.functions.getByName(elsewhere.namespace, fn.name)).to.deep.equal(elsewhere);
      });

      it('rejects a taken function_id with ConflictError and keeps the first record', async () => {
        const fn = functionRecord();
        await stores.functions.create(fn);
        const sameId = functionRecord({ function_id: fn.function_id, namespace: fn.namespace });
        expect(await rejectionOf(stores.functions.create(sameId))).to.be.instanceOf(ConflictError);
        expect(await stores.functions.get(fn.function_id)).to.deep.equal(fn);
      });

      it('lists one namespace sorted by name, and all namespaces when none is given', async () => {
        const ns = namespace();
        const other = namespace();
        const c = functionRecord({ namespace: ns, name: 'charlie' });
        const a = functionRecord({ namespace: ns, name: 'alpha' });
        const b = functionRecord({ namespace: other, name: 'bravo' });
        for (const fn of [c, a, b]) await stores.functions.create(fn);
        expect(await stores.functions.list(ns)).to.deep.equal([a, c]);
        expect(await stores.functions.list(namespace())).to.deep.equal([]);
        const all = (await stores.functions.list()).filter((fn) => fn.namespace === ns || fn.namespace === other);
        expect(all).to.deep.equal([a, b, c]);
        const names = (await stores.functions.list()).map((fn) => fn.name);
        expect(names).to.deep.equal([...names].sort());
      });

      it('update replaces the whole record; a missing function gives NotFoundError', async () => {
        const fn = functionRecord();
        await stores.functions.create(fn);
        const changed: FunctionRecord = { ...fn, code: 'export default (req, res) => res.json(2)', active: false, env: {}, retention: { type: 'time', days: 3 }, schedule: { cron: '* * * * *', timezone: 'UTC', enabled: false }, updated_at: iso(CONTRACT_EPOCH + 1000) };
        await stores.functions.update(changed);
        expect(await stores.functions.get(fn.function_id)).to.deep.equal(changed);
        const missing = functionRecord();
        const err = await rejectionOf(stores.functions.update(missing));
        expect(err).to.be.instanceOf(NotFoundError);
        expect((err as Error).message).to.include(missing.function_id);
        expect(await stores.functions.get(missing.function_id)).to.equal(null);
      });

      it('update to a name taken in the namespace gives ConflictError; renaming to a free name works', async () => {
        const ns = namespace();
        const a = functionRecord({ namespace: ns, name: 'first' });
        const b = functionRecord({ namespace: ns, name: 'second' });
        await stores.functions.create(a);
        await stores.functions.create(b);
        expect(await rejectionOf(stores.functions.update({ ...b, name: 'first' }))).to.be.instanceOf(ConflictError);
        expect(await stores.functions.get(b.function_id)).to.deep.equal(b);
        await stores.functions.update({ ...b, name: 'third' });
        expect(await stores.functions.getByName(ns, 'third')).to.deep.equal({ ...b, name: 'third' });
        expect(await stores.functions.getByName(ns, 'second')).to.equal(null);
      });

      it('delete says whether a function was there, and frees its name', async () => {
        const fn = functionRecord();
        await stores.functions.create(fn);
        expect(await stores.functions.delete(fn.function_id)).to.equal(true);
        expect(await stores.functions.delete(fn.function_id)).to.equal(false);
        expect(await stores.functions.get(fn.function_id)).to.equal(null);
        await stores.functions.create(functionRecord({ name: fn.name, namespace: fn.namespace }));
      });
    });

    describe('LogStore listing', () => {
      it('gives page 1 of 1 with no records for a function without logs', async () => {
        const page = await stores.logs.list(randomUUID(), query(), NONE, CONTRACT_EPOCH);
        expect(page).to.deep.equal({ logs: [], pagination: { currentPage: 1, totalPages: 1, totalCount: 0, hasNextPage: false, hasPrevPage: false } });
        for (const status of ['success', 'error'] as const) {
          expect((await stores.logs.list(randomUUID(), query({ status, page: 3 }), NONE, CONTRACT_EPOCH)).pagination)
            .to.deep.equal({ currentPage: 3, totalPages: 1, totalCount: 0, hasNextPage: false, hasPrevPage: true });
        }
      });

      it('returns exactly the spec fields of each record, newest first by executed_at whatever the insertion order', async () => {
        const fnId = randomUUID();
        const records = [
          log(fnId, CONTRACT_EPOCH + 2000, { status_code: 500, error_message: 'TypeError: x is not a function', execution_time_ms: 31, trigger: 'schedule' }),
          log(fnId, CONTRACT_EPOCH + 5000, { status_code: 200, execution_time_ms: 0, trigger: 'test' }),
          log(fnId, CONTRACT_EPOCH + 1000, { status_code: 404, error_message: 'HTTP 404' }),
        ];
        await stores.logs.insert(records.slice(0, 2));
        await stores.logs.insert(records.slice(2));
        const page = await stores.logs.list(fnId, query(), NONE, CONTRACT_EPOCH + DAY);
        expect(page.logs).to.deep.equal([records[1]!, records[0]!, records[2]!].map(stripExpiry));
        for (const entry of page.logs) {
          expect(Object.keys(entry).sort()).to.deep.equal(['error_message', 'executed_at', 'execution_time_ms', 'function_id', 'id', 'status_code', 'trigger']);
          expect(entry.executed_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
          expect(entry.id).to.match(/^log_/);
        }
        expect(page.pagination).to.deep.equal({ currentPage: 1, totalPages: 1, totalCount: 3, hasNextPage: false, hasPrevPage: false });
      });

      it('keeps a record\'s error_stack as written, and gives none to a record that has none', async () => {
        const fnId = randomUUID();
        const stack = 'at explode (src/handler.ts:20:9)\nat handler (src/handler.ts:13:29)';
        const thrown = log(fnId, CONTRACT_EPOCH + 2000, { status_code: 500, error_message: 'Error: fixture exploded', error_stack: stack });
        const plain = log(fnId, CONTRACT_EPOCH + 1000, { status_code: 500, error_message: 'HTTP 500' });
        await stores.logs.insert([thrown, plain]);
        const page = await stores.logs.list(fnId, query(), NONE, CONTRACT_EPOCH + DAY);
        expect(page.logs).to.deep.equal([thrown, plain].map(stripExpiry));
        expect(page.logs[0]!.error_stack).to.equal(stack);
        expect(page.logs[1]).to.not.have.property('error_stack');
      });

      it('orders records with the same executed_at newest-inserted first, within a batch and across batches', async () => {
        const fnId = randomUUID();
        const at = CONTRACT_EPOCH + 7000;
        const first = [log(fnId, at), log(fnId, at), log(fnId, at)];
        const second = [log(fnId, at), log(fnId, at)];
        await stores.logs.insert(first);
        await stores.logs.insert([log(fnId, at - 1)]);
        await stores.logs.insert(second);
        const ids = (await stores.logs.list(fnId, query(), NONE, at)).logs.map((l) => l.id);
        expect(ids.slice(0, 5)).to.deep.equal([...first, ...second].map((l) => l.id).reverse());
        expect(ids).to.have.length(6);
        // Deterministic: the same on every read and across page boundaries.
        const paged: string[] = [];
        for (let page = 1; page <= 6; page++) paged.push(...(await stores.logs.list(fnId, query({ limit: 1, page }), NONE, at)).logs.map((l) => l.id));
        expect(paged).to.deep.equal(ids);
      });

      it('filters by status class: success is 2xx, error is 400 and above, 1xx and 3xx only under all', async () => {
        const fnId = randomUUID();
        const codes = [100, 101, 199, 200, 201, 204, 299, 300, 301, 304, 399, 400, 404, 418, 499, 500, 502, 504, 599];
        const records = codes.map((status_code, i) => log(fnId, CONTRACT_EPOCH + i * 1000, { status_code }));
        await stores.logs.insert(records);
        const codesOf = async (status: StatusFilter) => {
          const page = await stores.logs.list(fnId, query({ status, limit: 100 }), NONE, CONTRACT_EPOCH + DAY);
          expect(page.pagination.totalCount).to.equal(page.logs.length);
          return page.logs.map((l) => l.status_code);
        };
        expect(await codesOf('success')).to.deep.equal([299, 204, 201, 200]);
        expect(await codesOf('error')).to.deep.equal([599, 504, 502, 500, 499, 418, 404, 400]);
        expect(await codesOf('all')).to.deep.equal([...codes].reverse());
      });

      it('keeps functions apart', async () => {
        const a = randomUUID();
        const b = randomUUID();
        await stores.logs.insert([log(a, CONTRACT_EPOCH), log(b, CONTRACT_EPOCH), log(a, CONTRACT_EPOCH + 1, { status_code: 500 }), log(b, CONTRACT_EPOCH + 2)]);
        const pageA = await stores.logs.list(a, query(), NONE, CONTRACT_EPOCH);
        expect(pageA.logs.map((l) => l.function_id)).to.deep.equal([a, a]);
        expect(pageA.pagination.totalCount).to.equal(2);
        expect((await stores.logs.list(b, query({ status: 'error' }), NONE, CONTRACT_EPOCH)).pagination.totalCount).to.equal(0);
      });

      it('recentCounts counts a function\'s executions at or after a time, and its errors (>= 400), across minute boundaries', async () => {
        const fnId = randomUUID();
        const other = randomUUID();
        const MIN = 60_000;
        // since = 12:03:30; records on both sides of it, in its minute and in later minutes and hours.
        const since = CONTRACT_EPOCH + 12 * 3_600_000 + 3 * MIN + 30_000;
        const at = (offset: number, status = 200) => log(fnId, since + offset, { status_code: status });
        await stores.logs.insert([
          at(-31 * MIN, 500), at(-20_000, 500), at(-1, 404), // before: never counted
          at(0, 500), at(10_000), at(29_999, 302), // the since minute, from since on
          at(30_000, 503), at(5 * MIN), at(61 * MIN, 400), at(25 * 3_600_000, 201), // later minutes, hours, a day
          log(other, since + 1000, { status_code: 500 }),
        ]);
        expect(await stores.logs.recentCounts(fnId, since)).to.deep.equal({ total: 7, errors: 3 });
        expect(await stores.logs.recentCounts(fnId, since + 30_000)).to.deep.equal({ total: 4, errors: 2 });
        expect(await stores.logs.recentCounts(fnId, since + 26 * 3_600_000)).to.deep.equal({ total: 0, errors: 0 });
        expect(await stores.logs.recentCounts(randomUUID(), since)).to.deep.equal({ total: 0, errors: 0 });
      });

      it('accepts an empty batch', async () => {
        await stores.logs.insert([]);
        const fnId = randomUUID();
        await stores.logs.insert([log(fnId, CONTRACT_EPOCH)]);
        await stores.logs.insert([]);
        expect((await stores.logs.list(fnId, query(), NONE, CONTRACT_EPOCH)).pagination.totalCount).to.equal(1);
      });
    });

    describe('LogStore pagination', () => {
      /** 23 records, mixed classes, a few equal timestamps; returns them newest first. */
      async function seed(fnId: string): Promise<ExecutionLog[]> {
        const records = Array.from({ length: 23 }, (_, i) => log(fnId, CONTRACT_EPOCH + Math.floor(i / 3) * 1000, { status_code: [200, 500, 302, 201, 404][i % 5]! }));
        await stores.logs.insert(records.slice(0, 10));
        await stores.logs.insert(records.slice(10));
        return records.reverse().map(stripExpiry);
      }

      it('pages through every filter: each page is the slice of the full newest-first list, at every limit', async () => {
        const fnId = randomUUID();
        const all = await seed(fnId);
        for (const status of ['all', 'success', 'error'] as const) {
          const expected = all.filter((l) => inClass(l.status_code, status));
          for (const limit of [1, 2, 3, 5, 7, 22, 23, 24, 1000]) {
            const totalPages = Math.max(1, Math.ceil(expected.length / limit));
            for (let page = 1; page <= totalPages; page++) {
              const got = await stores.logs.list(fnId, { status, limit, page }, NONE, CONTRACT_EPOCH + DAY);
              expect(got.logs, `${status} limit ${limit} page ${page}`).to.deep.equal(expected.slice((page - 1) * limit, page * limit));
              expect(got.pagination).to.deep.equal({ currentPage: page, totalPages, totalCount: expected.length, hasNextPage: page < totalPages, hasPrevPage: page > 1 });
            }
          }
        }
      });

      it('gives an exact multiple of the limit whole pages and no empty last page', async () => {
        const fnId = randomUUID();
        await stores.logs.insert(Array.from({ length: 10 }, (_, i) => log(fnId, CONTRACT_EPOCH + i)));
        const page2 = await stores.logs.list(fnId, query({ limit: 5, page: 2 }), NONE, CONTRACT_EPOCH);
        expect(page2.logs).to.have.length(5);
        expect(page2.pagination).to.deep.equal({ currentPage: 2, totalPages: 2, totalCount: 10, hasNextPage: false, hasPrevPage: true });
      });

      it('gives an empty page with the true totals past the end', async () => {
        const fnId = randomUUID();
        await seed(fnId);
        const past = await stores.logs.list(fnId, query({ limit: 5, page: 6 }), NONE, CONTRACT_EPOCH + DAY);
        expect(past).to.deep.equal({ logs: [], pagination: { currentPage: 6, totalPages: 5, totalCount: 23, hasNextPage: false, hasPrevPage: true } });
        const farPast = await stores.logs.list(fnId, query({ status: 'error', limit: 1, page: 1_000_000 }), NONE, CONTRACT_EPOCH + DAY);
        expect(farPast.logs).to.deep.equal([]);
        expect(farPast.pagination).to.deep.equal({ currentPage: 1_000_000, totalPages: 9, totalCount: 9, hasNextPage: false, hasPrevPage: true });
      });

      it('with limit 1 gives one record per page and a page per record', async () => {
        const fnId = randomUUID();
        const all = await seed(fnId);
        const last = await stores.logs.list(fnId, query({ limit: 1, page: 23 }), NONE, CONTRACT_EPOCH + DAY);
        expect(last.logs).to.deep.equal([all[22]]);
        expect(last.pagination).to.deep.equal({ currentPage: 23, totalPages: 23, totalCount: 23, hasNextPage: false, hasPrevPage: true });
        const first = await stores.logs.list(fnId, query({ limit: 1, page: 1 }), NONE, CONTRACT_EPOCH + DAY);
        expect(first.logs).to.deep.equal([all[0]]);
        expect(first.pagination.hasNextPage).to.equal(true);
        expect(first.pagination.hasPrevPage).to.equal(false);
      });
    });

    describe('LogStore over a long, uneven history', () => {
      it('every page of every filter under every kind of policy matches a model of the rules, from both ends', async () => {
        const fnId = randomUUID();
        // 400 records over ~5 hours: bursts in one millisecond, bursts within a
        // minute, gaps of minutes and of an hour; inserted in batches, some
        // batches out of time order.
        const random = seededRandom(42);
        const times: number[] = [];
        let t = CONTRACT_EPOCH + 12_345;
        while (times.length < 400) {
          const r = random();
          if (r < 0.2) t += 0; // same millisecond as the previous record
          else if (r < 0.6) t += Math.floor(random() * 3000);
          else if (r < 0.95) t += Math.floor(random() * 180_000);
          else if (r < 0.98) t += 3_600_000;
          else t += DAY + 1234;
          times.push(t);
        }
        const records = times.map((ms, i) => log(fnId, ms, { status_code: [200, 201, 500, 302, 404, 101, 204, 503][Math.floor(random() * 8)]!, execution_time_ms: i }));
        const batches: StoredLog[][] = [];
        for (let i = 0; i < records.length; i += 37) batches.push(records.slice(i, i + 37));
        [batches[3], batches[5]] = [batches[5]!, batches[3]!];
        for (const batch of batches) await stores.logs.insert(batch);
        // The model: newest first by executed_at, then newest-inserted first.
        const insertionOrder = batches.flat();
        const newestFirst = insertionOrder.map((record, order) => ({ record, order }))
          .sort((a, b) => Date.parse(b.record.executed_at) - Date.parse(a.record.executed_at) || b.order - a.order)
          .map(({ record }) => stripExpiry(record));
        const last = times[times.length - 1]!;
        const first = times[0]!;
        const policies: [RetentionPolicy, number][] = [
          [NONE, last],
          [{ type: 'time', days: 1 }, first + DAY + 1],
          [{ type: 'time', days: 1 }, first + Math.floor((last - first) / 3) + DAY],
          [{ type: 'time', days: 1 }, last - 90_000 + DAY],
          [{ type: 'count', count: 1 }, last],
          [{ type: 'count', count: 57 }, last],
          [{ type: 'count', count: 199 }, last],
          [{ type: 'count', count: 333 }, last],
          [{ type: 'count', count: 399 }, last],
        ];
        for (const [retention, now] of policies) {
          const kept = newestFirst.filter((l, i) => retention.type === 'time' ? Date.parse(l.executed_at) >= now - retention.days * DAY : retention.type === 'count' ? i < retention.count : true);
          for (const status of ['all', 'success', 'error'] as const) {
            const expected = kept.filter((l) => inClass(l.status_code, status));
            for (const limit of [7, 50]) {
              const totalPages = Math.max(1, Math.ceil(expected.length / limit));
              for (let page = 1; page <= totalPages + 1; page++) {
                const got = await stores.logs.list(fnId, { status, limit, page }, retention, now);
                const what = `${JSON.stringify(retention)} now+${now - first} ${status} limit ${limit} page ${page}`;
                expect(got.pagination.totalCount, what).to.equal(expected.length);
                expect(got.logs.map((l) => l.id), what).to.deep.equal(expected.slice((page - 1) * limit, page * limit).map((l) => l.id));
              }
            }
          }
        }
        expect(await stores.logs.list(fnId, query({ limit: 1000 }), NONE, last)).to.deep.equal({
          logs: newestFirst,
          pagination: { currentPage: 1, totalPages: 1, totalCount: 400, hasNextPage: false, hasPrevPage: false },
        });
        // After sweeping to count 150, then time: the same model holds.
        expectDeleted(await stores.logs.applyRetention(fnId, { type: 'count', count: 150 }, last), 250);
        const cut = Date.parse(newestFirst[100]!.executed_at);
        const afterTime = newestFirst.slice(0, 150).filter((l) => Date.parse(l.executed_at) >= cut);
        await stores.logs.applyRetention(fnId, { type: 'time', days: 1 }, cut + DAY);
        for (const status of ['all', 'success', 'error'] as const) {
          const expected = afterTime.filter((l) => inClass(l.status_code, status));
          for (let page = 1; page <= Math.ceil(expected.length / 9); page++) {
            const got = await stores.logs.list(fnId, { status, limit: 9, page }, NONE, last);
            expect(got.pagination.totalCount).to.equal(expected.length);
            expect(got.logs.map((l) => l.id), `${status} page ${page}`).to.deep.equal(expected.slice((page - 1) * 9, page * 9).map((l) => l.id));
          }
        }
      });
    });

    describe('LogStore retention as a read filter', () => {
      /** One record per day for 10 days before `now`, at now - d days - 1 hour (d = 0..9), status alternating 200/500. */
      async function daily(fnId: string, retention: RetentionPolicy = NONE): Promise<ExecutionLog[]> {
        const records = Array.from({ length: 10 }, (_, d) => log(fnId, NOW - d * DAY - 3_600_000, { status_code: d % 2 === 0 ? 200 : 500 }, retention));
        await stores.logs.insert(records);
        return records.map(stripExpiry); // already newest first
      }
      const NOW = CONTRACT_EPOCH + 30 * DAY;

      it('none shows everything', async () => {
        const fnId = randomUUID();
        const all = await daily(fnId);
        const page = await stores.logs.list(fnId, query(), NONE, NOW);
        expect(page.logs).to.deep.equal(all);
        expect(page.pagination.totalCount).to.equal(10);
      });

      it('time hides records older than now - days at once, in the logs and in totalCount, with and without a status filter', async () => {
        const fnId = randomUUID();
        const all = await daily(fnId, { type: 'time', days: 3 });
        const page = await stores.logs.list(fnId, query(), { type: 'time', days: 3 }, NOW);
        expect(page.logs).to.deep.equal(all.slice(0, 3));
        expect(page.pagination).to.deep.equal({ currentPage: 1, totalPages: 1, totalCount: 3, hasNextPage: false, hasPrevPage: false });
        const errors = await stores.logs.list(fnId, query({ status: 'error' }), { type: 'time', days: 3 }, NOW);
        expect(errors.logs).to.deep.equal([all[1]]);
        expect(errors.pagination.totalCount).to.equal(1);
        const success = await stores.logs.list(fnId, query({ status: 'success', limit: 1, page: 2 }), { type: 'time', days: 3 }, NOW);
        expect(success.logs).to.deep.equal([all[2]]);
        expect(success.pagination).to.deep.equal({ currentPage: 2, totalPages: 2, totalCount: 2, hasNextPage: false, hasPrevPage: true });
      });

      it('time keeps a record exactly days old and hides one a millisecond older', async () => {
        const fnId = randomUUID();
        const edge = log(fnId, NOW - 2 * DAY);
        const older = log(fnId, NOW - 2 * DAY - 1);
        await stores.logs.insert([edge, older]);
        const page = await stores.logs.list(fnId, query(), { type: 'time', days: 2 }, NOW);
        expect(page.logs).to.deep.equal([stripExpiry(edge)]);
        expect(page.pagination.totalCount).to.equal(1);
      });

      it('time follows the clock: the same records disappear as now moves on', async () => {
        const fnId = randomUUID();
        await daily(fnId, { type: 'time', days: 5 });
        const counts = [];
        for (const later of [0, DAY, 3 * DAY, 10 * DAY]) counts.push((await stores.logs.list(fnId, query(), { type: 'time', days: 5 }, NOW + later)).pagination.totalCount);
        expect(counts).to.deep.equal([5, 4, 2, 0]);
      });

      it('count shows only the N newest, and the status filter applies within those', async () => {
        const fnId = randomUUID();
        const all = await daily(fnId);
        const count4: RetentionPolicy = { type: 'count', count: 4 };
        const page = await stores.logs.list(fnId, query(), count4, NOW);
        expect(page.logs).to.deep.equal(all.slice(0, 4));
        expect(page.pagination.totalCount).to.equal(4);
        const errors = await stores.logs.list(fnId, query({ status: 'error' }), count4, NOW);
        expect(errors.logs).to.deep.equal([all[1], all[3]]);
        expect(errors.pagination.totalCount).to.equal(2);
        const success = await stores.logs.list(fnId, query({ status: 'success', limit: 1, page: 2 }), count4, NOW);
        expect(success.logs).to.deep.equal([all[2]]);
        expect(success.pagination).to.deep.equal({ currentPage: 2, totalPages: 2, totalCount: 2, hasNextPage: false, hasPrevPage: true });
        const pastEnd = await stores.logs.list(fnId, query({ limit: 2, page: 3 }), count4, NOW);
        expect(pastEnd).to.deep.equal({ logs: [], pagination: { currentPage: 3, totalPages: 2, totalCount: 4, hasNextPage: false, hasPrevPage: true } });
      });

      it('count larger than the records, and count 1, behave', async () => {
        const fnId = randomUUID();
        const all = await daily(fnId);
        expect((await stores.logs.list(fnId, query(), { type: 'count', count: 1000 }, NOW)).logs).to.deep.equal(all);
        const one = await stores.logs.list(fnId, query(), { type: 'count', count: 1 }, NOW);
        expect(one.logs).to.deep.equal([all[0]]);
        expect((await stores.logs.list(fnId, query({ status: 'error' }), { type: 'count', count: 1 }, NOW)).pagination.totalCount).to.equal(0);
      });

      it('count cuts records with equal executed_at by insertion order', async () => {
        const fnId = randomUUID();
        const same = Array.from({ length: 5 }, (_, i) => log(fnId, NOW - 1000, { status_code: i % 2 === 0 ? 200 : 503 }));
        await stores.logs.insert(same.slice(0, 2));
        await stores.logs.insert(same.slice(2));
        const page = await stores.logs.list(fnId, query(), { type: 'count', count: 3 }, NOW);
        expect(page.logs.map((l) => l.id)).to.deep.equal([same[4]!.id, same[3]!.id, same[2]!.id]);
        const errors = await stores.logs.list(fnId, query({ status: 'error' }), { type: 'count', count: 3 }, NOW);
        expect(errors.logs.map((l) => l.id)).to.deep.equal([same[3]!.id]);
      });

      it('count works on many records, whichever side of the middle the cut falls', async () => {
        const fnId = randomUUID();
        const records = Array.from({ length: 200 }, (_, i) => log(fnId, CONTRACT_EPOCH + i * 1000, { status_code: i % 3 === 0 ? 500 : 200 }));
        await stores.logs.insert(records);
        const newestFirst = records.slice().reverse().map(stripExpiry);
        for (const count of [3, 99, 100, 101, 190]) {
          const kept = newestFirst.slice(0, count);
          for (const status of ['all', 'success', 'error'] as const) {
            const expected = kept.filter((l) => inClass(l.status_code, status));
            const first = await stores.logs.list(fnId, { status, limit: 7, page: 1 }, { type: 'count', count }, NOW);
            expect(first.pagination.totalCount, `count ${count} ${status}`).to.equal(expected.length);
            expect(first.logs).to.deep.equal(expected.slice(0, 7));
            const lastPage = Math.max(1, Math.ceil(expected.length / 7));
            const last = await stores.logs.list(fnId, { status, limit: 7, page: lastPage }, { type: 'count', count }, NOW);
            expect(last.logs, `count ${count} ${status} last page`).to.deep.equal(expected.slice((lastPage - 1) * 7));
          }
        }
      });

      it('a policy change applies to records already stored: time shortened and lengthened, then count, then none', async () => {
        const fnId = randomUUID();
        const all = await daily(fnId, { type: 'time', days: 5 });
        const total = async (retention: RetentionPolicy, status: StatusFilter = 'all') => (await stores.logs.list(fnId, query({ status }), retention, NOW)).pagination.totalCount;
        expect(await total({ type: 'time', days: 5 })).to.equal(5);
        expect(await total({ type: 'time', days: 2 })).to.equal(2);
        expect(await total({ type: 'time', days: 8 })).to.equal(8);
        expect(await total({ type: 'count', count: 6 })).to.equal(6);
        expect(await total({ type: 'count', count: 6 }, 'error')).to.equal(3);
        expect(await total(NONE)).to.equal(10);
        expect((await stores.logs.list(fnId, query(), NONE, NOW)).logs).to.deep.equal(all);
      });
    });

    describe('LogStore applyRetention', () => {
      const NOW = CONTRACT_EPOCH + 30 * DAY;
      async function daily(fnId: string, retention: RetentionPolicy = NONE): Promise<ExecutionLog[]> {
        const records = Array.from({ length: 10 }, (_, d) => log(fnId, NOW - d * DAY - 3_600_000, { status_code: d % 2 === 0 ? 200 : 500 }, retention));
        await stores.logs.insert(records);
        return records.map(stripExpiry);
      }
      const everything = async (fnId: string) => (await stores.logs.list(fnId, query({ limit: 1000 }), NONE, NOW)).logs;

      it('time deletes what is older than now - days and keeps the rest', async () => {
        const fnId = randomUUID();
        const all = await daily(fnId, { type: 'time', days: 4 });
        expectDeleted(await stores.logs.applyRetention(fnId, { type: 'time', days: 4 }, NOW), 6);
        expect(await everything(fnId)).to.deep.equal(all.slice(0, 4));
        expect(await stores.logs.applyRetention(fnId, { type: 'time', days: 4 }, NOW)).to.equal(0);
        // Lengthening afterwards cannot bring deleted records back.
        expect((await stores.logs.list(fnId, query(), { type: 'time', days: 30 }, NOW)).pagination.totalCount).to.equal(4);
      });

      it('count deletes all but the N newest, and counts stay right for later inserts and filters', async () => {
        const fnId = randomUUID();
        const all = await daily(fnId);
        expectDeleted(await stores.logs.applyRetention(fnId, { type: 'count', count: 3 }, NOW), 7);
        expect(await everything(fnId)).to.deep.equal(all.slice(0, 3));
        const newer = log(fnId, NOW, { status_code: 500 });
        await stores.logs.insert([newer]);
        const errors = await stores.logs.list(fnId, query({ status: 'error' }), NONE, NOW);
        expect(errors.logs).to.deep.equal([stripExpiry(newer), all[1]]);
        expect(errors.pagination.totalCount).to.equal(2);
        expect((await stores.logs.list(fnId, query({ status: 'success' }), NONE, NOW)).pagination.totalCount).to.equal(2);
        expect((await stores.logs.list(fnId, query({ status: 'success' }), { type: 'count', count: 3 }, NOW)).pagination.totalCount).to.equal(1);
        expectDeleted(await stores.logs.applyRetention(fnId, { type: 'count', count: 3 }, NOW), 1);
        expect((await everything(fnId)).map((l) => l.id)).to.deep.equal([newer.id, all[0]!.id, all[1]!.id]);
      });

      it('none deletes nothing', async () => {
        const fnId = randomUUID();
        const all = await daily(fnId, { type: 'time', days: 1 });
        expect(await stores.logs.applyRetention(fnId, NONE, NOW)).to.equal(0);
        expect(await everything(fnId)).to.deep.equal(all);
      });

      it('a sequence of policy changes rewrites the stored records: time 8, time 5, count 2, none', async () => {
        const fnId = randomUUID();
        const all = await daily(fnId, NONE);
        expectDeleted(await stores.logs.applyRetention(fnId, { type: 'time', days: 8 }, NOW), 2);
        expect(await everything(fnId)).to.deep.equal(all.slice(0, 8));
        // A day later, the time-8 records expire one more on the clock alone.
        expect((await stores.logs.list(fnId, query(), { type: 'time', days: 8 }, NOW + DAY)).pagination.totalCount).to.equal(7);
        expectDeleted(await stores.logs.applyRetention(fnId, { type: 'time', days: 5 }, NOW), 3);
        expect(await everything(fnId)).to.deep.equal(all.slice(0, 5));
        expectDeleted(await stores.logs.applyRetention(fnId, { type: 'count', count: 2 }, NOW), 3);
        expect(await everything(fnId)).to.deep.equal(all.slice(0, 2));
        // Under count and none, nothing expires with time any more (expires_at cleared).
        expect(await stores.logs.applyRetention(fnId, NONE, NOW + 365 * DAY)).to.equal(0);
        expect(await stores.logs.applyRetention(fnId, { type: 'count', count: 2 }, NOW + 365 * DAY)).to.equal(0);
        expect((await stores.logs.list(fnId, query(), NONE, NOW + 365 * DAY)).logs).to.deep.equal(all.slice(0, 2));
      });

      it('a large sweep (12,000 records) deletes exactly the hidden ones and keeps the counts right', async () => {
        const fnId = randomUUID();
        const records = Array.from({ length: 12_000 }, (_, i) => log(fnId, CONTRACT_EPOCH + i * 1000, { status_code: i % 4 === 0 ? 500 : i % 4 === 1 ? 302 : 200 }));
        for (let i = 0; i < records.length; i += 2000) await stores.logs.insert(records.slice(i, i + 2000));
        expectDeleted(await stores.logs.applyRetention(fnId, { type: 'count', count: 101 }, NOW), 11_899);
        const kept = records.slice(-101).reverse().map(stripExpiry);
        for (const status of ['all', 'success', 'error'] as const) {
          const expected = kept.filter((l) => inClass(l.status_code, status));
          const page = await stores.logs.list(fnId, query({ status, limit: 1000 }), NONE, NOW);
          expect(page.logs, status).to.deep.equal(expected);
          expect(page.pagination.totalCount, status).to.equal(expected.length);
        }
        // Time retention on what is left: the 101 records span 100 s ending at CONTRACT_EPOCH + 11,999 s.
        const cutoffDays = 1;
        const at = CONTRACT_EPOCH + 11_950 * 1000 + cutoffDays * DAY;
        expectDeleted(await stores.logs.applyRetention(fnId, { type: 'time', days: cutoffDays }, at), 51);
        expect((await stores.logs.list(fnId, query({ limit: 1000 }), NONE, NOW)).logs).to.deep.equal(kept.slice(0, 50));
      });

      it('touches only the function it is given', async () => {
        const a = randomUUID();
        const b = randomUUID();
        await daily(a);
        const bLogs = await daily(b);
        await stores.logs.applyRetention(a, { type: 'count', count: 1 }, NOW);
        expect(await everything(b)).to.deep.equal(bLogs);
      });

      it('deleteFunction removes every record of the function and nothing else', async () => {
        const a = randomUUID();
        const b = randomUUID();
        await daily(a);
        const bLogs = await daily(b);
        expect(await stores.logs.deleteFunction(a)).to.equal(10);
        expect(await stores.logs.list(a, query(), NONE, NOW)).to.deep.equal({ logs: [], pagination: { currentPage: 1, totalPages: 1, totalCount: 0, hasNextPage: false, hasPrevPage: false } });
        expect((await stores.logs.list(a, query({ status: 'error' }), NONE, NOW)).pagination.totalCount).to.equal(0);
        expect(await everything(b)).to.deep.equal(bLogs);
        expect(await stores.logs.deleteFunction(a)).to.equal(0);
        await stores.logs.insert([log(a, NOW, { status_code: 500 })]);
        expect((await stores.logs.list(a, query({ status: 'error' }), NONE, NOW)).pagination.totalCount).to.equal(1);
      });
    });

    describeInsightContract(() => stores);
    describeKvQuotaContract(() => stores);

    describe('CounterStore', () => {
      it('starts at 0 and adds batches for several functions at once', async () => {
        const a = randomUUID();
        const b = randomUUID();
        expect(await stores.counters.get(a)).to.equal(0);
        await stores.counters.add(new Map([[a, 3], [b, 1]]));
        await stores.counters.add(new Map([[a, 2]]));
        await stores.counters.add(new Map());
        expect(await stores.counters.get(a)).to.equal(5);
        expect(await stores.counters.get(b)).to.equal(1);
      });

      it('is never lowered by retention or by deleting the logs', async () => {
        const fnId = randomUUID();
        await stores.logs.insert(Array.from({ length: 5 }, (_, i) => log(fnId, CONTRACT_EPOCH + i)));
        await stores.counters.add(new Map([[fnId, 5]]));
        await stores.logs.applyRetention(fnId, { type: 'count', count: 1 }, CONTRACT_EPOCH);
        expect(await stores.counters.get(fnId)).to.equal(5);
        await stores.logs.deleteFunction(fnId);
        expect(await stores.counters.get(fnId)).to.equal(5);
      });

      it('delete resets one function only', async () => {
        const a = randomUUID();
        const b = randomUUID();
        await stores.counters.add(new Map([[a, 7], [b, 9]]));
        await stores.counters.delete(a);
        expect(await stores.counters.get(a)).to.equal(0);
        expect(await stores.counters.get(b)).to.equal(9);
        await stores.counters.add(new Map([[a, 1]]));
        expect(await stores.counters.get(a)).to.equal(1);
      });
    });

    describe('KvStore', () => {
      const T0 = CONTRACT_EPOCH + 1000 * DAY;

      it('stores JSON text and gives it back verbatim; missing keys are undefined / false', async () => {
        const ns = namespace();
        const values = ['{"a":[1,2,{"b":null}],"s":"é✓ \\u0000"}', '"text"', '42', 'true', 'null', '[]'];
        for (const [i, value] of values.entries()) await stores.kv.set(ns, `k${i}`, value, null, T0);
        for (const [i, value] of values.entries()) {
          expect(await stores.kv.get(ns, `k${i}`, T0)).to.equal(value);
          expect(await stores.kv.has(ns, `k${i}`, T0)).to.equal(true);
        }
        expect(await stores.kv.get(ns, 'missing', T0)).to.equal(undefined);
        expect(await stores.kv.has(ns, 'missing', T0)).to.equal(false);
      });

      it('overwrites a value, and delete says whether the key was there', async () => {
        const ns = namespace();
        await stores.kv.set(ns, 'k', '1', null, T0);
        await stores.kv.set(ns, 'k', '2', null, T0);
        expect(await stores.kv.get(ns, 'k', T0)).to.equal('2');
        expect(await stores.kv.delete(ns, 'k')).to.equal(true);
        expect(await stores.kv.delete(ns, 'k')).to.equal(false);
        expect(await stores.kv.has(ns, 'k', T0)).to.equal(false);
      });

      it('a key with a TTL is there until ttl seconds have passed and gone from get, has and list at once afterwards, before any sweep', async () => {
        const ns = namespace();
        await stores.kv.set(ns, 'session', '"abc"', 10, T0);
        await stores.kv.set(ns, 'stays', '1', null, T0);
        expect(await stores.kv.get(ns, 'session', T0 + 9_999)).to.equal('"abc"');
        expect(await stores.kv.has(ns, 'session', T0 + 9_999)).to.equal(true);
        expect(await stores.kv.list(ns, '', 10, T0 + 9_999)).to.deep.equal(['session', 'stays']);
        expect(await stores.kv.get(ns, 'session', T0 + 10_000)).to.equal(undefined);
        expect(await stores.kv.has(ns, 'session', T0 + 10_000)).to.equal(false);
        expect(await stores.kv.list(ns, '', 10, T0 + 10_000)).to.deep.equal(['stays']);
        expect(await stores.kv.get(ns, 'stays', T0 + 1000 * DAY)).to.equal('1');
      });

      it('sweep physically removes expired keys only and says how many', async () => {
        const ns = namespace();
        await stores.kv.set(ns, 'a', '1', 1, T0);
        await stores.kv.set(ns, 'b', '1', 5, T0);
        await stores.kv.set(ns, 'c', '1', null, T0);
        const swept = await stores.kv.sweep(T0 + 2000);
        // Other tests' namespaces may hold keys expired by then too; at least ours went.
        if (!options.expiresInBackground) expect(swept).to.be.at.least(1);
        expect(await stores.kv.list(ns, '', 10, T0)).to.deep.equal(['b', 'c']);
        expect(await stores.kv.get(ns, 'b', T0 + 4999)).to.equal('1');
        expect(await stores.kv.delete(ns, 'a')).to.equal(false);
      });

      it('set again replaces the TTL: with a new one, or with none to keep the key', async () => {
        const ns = namespace();
        await stores.kv.set(ns, 'k', '1', 5, T0);
        await stores.kv.set(ns, 'k', '2', null, T0 + 1000);
        expect(await stores.kv.get(ns, 'k', T0 + 60_000)).to.equal('2');
        await stores.kv.set(ns, 'k', '3', 1, T0 + 60_000);
        expect(await stores.kv.get(ns, 'k', T0 + 60_999)).to.equal('3');
        expect(await stores.kv.get(ns, 'k', T0 + 61_000)).to.equal(undefined);
        // An expired key can be set again.
        await stores.kv.set(ns, 'k', '4', 1, T0 + 70_000);
        expect(await stores.kv.get(ns, 'k', T0 + 70_000)).to.equal('4');
      });

      it('lists live keys with a prefix, sorted, at most limit, taking the prefix literally', async () => {
        const ns = namespace();
        const keys = ['user:2', 'user:10', 'user:1', 'users', 'use', 'order:1', 'user%x', 'user_x', 'user:[a]*?', 'u'];
        for (const key of keys) await stores.kv.set(ns, key, '0', null, T0);
        await stores.kv.set(ns, 'user:0', '0', 1, T0);
        expect(await stores.kv.list(ns, 'user:', 100, T0 + 5000)).to.deep.equal(['user:1', 'user:10', 'user:2', 'user:[a]*?']);
        expect(await stores.kv.list(ns, 'user:', 2, T0 + 5000)).to.deep.equal(['user:1', 'user:10']);
        expect(await stores.kv.list(ns, 'user:', 100, T0)).to.deep.equal(['user:0', 'user:1', 'user:10', 'user:2', 'user:[a]*?']);
        expect(await stores.kv.list(ns, 'user%', 100, T0)).to.deep.equal(['user%x']);
        expect(await stores.kv.list(ns, 'user_', 100, T0)).to.deep.equal(['user_x']);
        expect(await stores.kv.list(ns, '', 100, T0 + 5000)).to.deep.equal([...keys].sort());
        expect(await stores.kv.list(ns, 'zzz', 100, T0)).to.deep.equal([]);
      });

      it('keeps namespaces apart, and deleteNamespace empties one', async () => {
        const a = namespace();
        const b = namespace();
        await stores.kv.set(a, 'k', '"a"', null, T0);
        await stores.kv.set(b, 'k', '"b"', null, T0);
        expect(await stores.kv.get(a, 'k', T0)).to.equal('"a"');
        expect(await stores.kv.get(b, 'k', T0)).to.equal('"b"');
        await stores.kv.deleteNamespace(a);
        expect(await stores.kv.has(a, 'k', T0)).to.equal(false);
        expect(await stores.kv.list(a, '', 10, T0)).to.deep.equal([]);
        expect(await stores.kv.get(b, 'k', T0)).to.equal('"b"');
      });
    });

    describe('PolicyStore', () => {
      const allowOnly = (host: string): NetworkPolicy => ({ default: 'deny', allow: [host], deny: [] });

      it('sets, reads, replaces and removes the global policy and a function scope independently', async () => {
        const fnScope = randomUUID();
        expect(await stores.policies.get(fnScope)).to.equal(null);
        await stores.policies.set(fnScope, allowOnly('api.example.com'), 'admin', CONTRACT_EPOCH);
        expect(await stores.policies.get(fnScope)).to.deep.equal(allowOnly('api.example.com'));
        const other = randomUUID();
        expect(await stores.policies.get(other)).to.equal(null);
        const replaced: NetworkPolicy = { default: 'allow', allow: [], deny: ['10.0.0.0/8', '*.internal'] };
        await stores.policies.set(fnScope, replaced, 'admin', CONTRACT_EPOCH + 1);
        expect(await stores.policies.get(fnScope)).to.deep.equal(replaced);
        await stores.policies.set(fnScope, null, 'admin', CONTRACT_EPOCH + 2);
        expect(await stores.policies.get(fnScope)).to.equal(null);
      });

      it('records every change with who, when, before and after; newest first, limited', async () => {
        const scope = randomUUID();
        const first = await stores.policies.set(scope, allowOnly('a.example.com'), 'alice', CONTRACT_EPOCH + 10);
        const second = await stores.policies.set(scope, allowOnly('b.example.com'), 'bob', CONTRACT_EPOCH + 20);
        const third = await stores.policies.set(scope, null, 'carol', CONTRACT_EPOCH + 30);
        expect(first).to.deep.include({ scope, actor: 'alice', at: iso(CONTRACT_EPOCH + 10), before: null, after: allowOnly('a.example.com') });
        expect(second).to.deep.include({ scope, actor: 'bob', at: iso(CONTRACT_EPOCH + 20), before: allowOnly('a.example.com'), after: allowOnly('b.example.com') });
        expect(third).to.deep.include({ scope, actor: 'carol', before: allowOnly('b.example.com'), after: null });
        expect(new Set([first.id, second.id, third.id]).size).to.equal(3);
        const recent = (await stores.policies.changes(1000)).filter((c) => c.scope === scope);
        expect(recent).to.deep.equal([third, second, first]);
        const [newest] = await stores.policies.changes(1);
        expect(newest).to.deep.equal(third);
        expect(await stores.policies.changes(2)).to.have.length(2);
        // The lean read of the follower (gateway/src/policy/follower.ts): the same order, ids and scopes only.
        expect(await stores.policies.changeScopes(3)).to.deep.equal((await stores.policies.changes(3)).map((c) => ({ id: c.id, scope: c.scope })));
        expect((await stores.policies.changeScopes(1000)).filter((c) => c.scope === scope)).to.deep.equal([third, second, first].map((c) => ({ id: c.id, scope })));
      });

      it('keeps the global scope apart from function scopes', async () => {
        const before = await stores.policies.get('global');
        const fnScope = randomUUID();
        await stores.policies.set(fnScope, allowOnly('x.example.com'), 'admin', CONTRACT_EPOCH);
        expect(await stores.policies.get('global')).to.deep.equal(before);
        const global: NetworkPolicy = { default: 'allow', allow: [], deny: ['169.254.169.254'] };
        const change = await stores.policies.set('global', global, 'admin', CONTRACT_EPOCH + 1);
        expect(change.before).to.deep.equal(before);
        expect(change.scope).to.equal('global');
        expect(await stores.policies.get('global')).to.deep.equal(global);
        expect(await stores.policies.get(fnScope)).to.deep.equal(allowOnly('x.example.com'));
      });
    });

    describe('SessionStore', () => {
      const session = (overrides: Partial<StoredSession> = {}): StoredSession => ({
        idHash: randomBytes(32).toString('hex'),
        label: randomBytes(4).toString('hex'),
        csrf: randomBytes(32).toString('base64url'),
        createdAt: CONTRACT_EPOCH,
        lastSeenAt: CONTRACT_EPOCH,
        expiresAt: CONTRACT_EPOCH + 30 * 60_000,
        ...overrides,
      });

      it('stores a session and reads it back by id hash until its end (exclusive)', async () => {
        const s = session();
        await stores.sessions.create(s, 1000);
        expect(await stores.sessions.get(s.idHash, CONTRACT_EPOCH)).to.deep.equal(s);
        expect(await stores.sessions.get(s.idHash, s.expiresAt - 1)).to.deep.equal(s);
        expect(await stores.sessions.get(s.idHash, s.expiresAt)).to.equal(null);
        expect(await stores.sessions.get(randomBytes(32).toString('hex'), CONTRACT_EPOCH)).to.equal(null);
      });

      it('moves last-seen and the end forward on touch, never back, and not for a missing session', async () => {
        const s = session();
        await stores.sessions.create(s, 1000);
        expect(await stores.sessions.touch(s.idHash, CONTRACT_EPOCH + 5000, s.expiresAt + 5000)).to.equal(true);
        const touched = { ...s, lastSeenAt: CONTRACT_EPOCH + 5000, expiresAt: s.expiresAt + 5000 };
        expect(await stores.sessions.get(s.idHash, s.expiresAt)).to.deep.equal(touched);
        // A late touch from another gateway with older times changes nothing.
        expect(await stores.sessions.touch(s.idHash, CONTRACT_EPOCH + 1000, s.expiresAt + 1000)).to.equal(true);
        expect(await stores.sessions.get(s.idHash, CONTRACT_EPOCH)).to.deep.equal(touched);
        expect(await stores.sessions.touch(randomBytes(32).toString('hex'), CONTRACT_EPOCH, CONTRACT_EPOCH + 1)).to.equal(false);
      });

      it('deletes a session (sign-out) and says whether it existed', async () => {
        const s = session();
        const other = session();
        await stores.sessions.create(s, 1000);
        await stores.sessions.create(other, 1000);
        expect(await stores.sessions.delete(s.idHash)).to.equal(true);
        expect(await stores.sessions.delete(s.idHash)).to.equal(false);
        expect(await stores.sessions.get(s.idHash, CONTRACT_EPOCH)).to.equal(null);
        expect(await stores.sessions.touch(s.idHash, CONTRACT_EPOCH + 1, s.expiresAt + 1)).to.equal(false);
        expect(await stores.sessions.get(other.idHash, CONTRACT_EPOCH)).to.deep.equal(other);
      });

      it('sweeps the sessions that have ended and keeps the others', async () => {
        const ended = [session({ expiresAt: CONTRACT_EPOCH + 10 }), session({ expiresAt: CONTRACT_EPOCH + 20 })];
        const live = session({ expiresAt: CONTRACT_EPOCH + 21 });
        for (const s of [...ended, live]) await stores.sessions.create(s, 1000);
        // At least ours (a shared store may hold other ended sessions).
        expect(await stores.sessions.sweep(CONTRACT_EPOCH + 20)).to.be.at.least(2);
        for (const s of ended) expect(await stores.sessions.delete(s.idHash), 'already swept').to.equal(false);
        expect(await stores.sessions.get(live.idHash, CONTRACT_EPOCH + 20)).to.deep.equal(live);
      });

      it('keeps at most keepAtMost sessions, dropping the oldest, never the new one', async () => {
        // Newer than any other test's sessions, so a shared store's others are the ones dropped.
        const base = CONTRACT_EPOCH + 3650 * DAY;
        const made: StoredSession[] = [];
        for (let i = 0; i < 5; i++) {
          const s = session({ createdAt: base + i, lastSeenAt: base + i, expiresAt: base + DAY });
          made.push(s);
          await stores.sessions.create(s, 3);
        }
        const present = await Promise.all(made.map(async (s) => (await stores.sessions.get(s.idHash, base)) !== null));
        expect(present).to.deep.equal([false, false, true, true, true]);
        // Same creation time as the newest: the new one stays all the same.
        const tie = session({ createdAt: base + 4, lastSeenAt: base + 4, expiresAt: base + DAY });
        await stores.sessions.create(tie, 1);
        expect(await stores.sessions.get(tie.idHash, base)).to.deep.equal(tie);
        expect(await stores.sessions.get(made[4]!.idHash, base)).to.equal(null);
      });
    });
    describe('ScheduleRunStore (the ledger of scheduled runs)', () => {
      const MIN = 60_000;
      function ran(functionId: string, plannedMs: number, fields: Partial<StoredScheduleRun> = {}): StoredScheduleRun {
        return {
          function_id: functionId, planned_at: iso(plannedMs), manual: false, outcome: 'ran', missed_reason: null,
          log_id: 'log_' + randomUUID().slice(0, 8), status_code: 200, execution_time_ms: 12, started_at: iso(plannedMs + 1500), lag_ms: 1500,
          expires_at: null, ...fields,
        };
      }
      function missed(functionId: string, plannedMs: number, reason: StoredScheduleRun['missed_reason']): StoredScheduleRun {
        return { ...ran(functionId, plannedMs), outcome: 'missed', missed_reason: reason, log_id: null, status_code: null, execution_time_ms: null, started_at: null, lag_ms: null };
      }
      const strip = ({ expires_at: _e, ...run }: StoredScheduleRun) => run;

      it('lists entries newest first by planned time with their record, lag, or missed reason, as written', async () => {
        const fnId = randomUUID();
        const a = ran(fnId, CONTRACT_EPOCH + 1 * MIN);
        const b = missed(fnId, CONTRACT_EPOCH + 2 * MIN, 'previous_running');
        const c = missed(fnId, CONTRACT_EPOCH + 3 * MIN, 'platform_down');
        const manual = ran(fnId, CONTRACT_EPOCH + 3 * MIN + 5000, { manual: true, started_at: iso(CONTRACT_EPOCH + 3 * MIN + 5000), lag_ms: 0, status_code: 500, execution_time_ms: 3 });
        // Written out of order: the listing orders by planned time.
        for (const run of [c, a, manual, b]) await stores.scheduleRuns.add(run, 100);
        await stores.scheduleRuns.add(ran(randomUUID(), CONTRACT_EPOCH), 100);
        expect(await stores.scheduleRuns.list(fnId, 10, CONTRACT_EPOCH)).to.deep.equal([manual, c, b, a].map(strip));
        expect(await stores.scheduleRuns.list(fnId, 2, CONTRACT_EPOCH)).to.deep.equal([manual, c].map(strip));
        expect(await stores.scheduleRuns.list(randomUUID(), 10, CONTRACT_EPOCH)).to.deep.equal([]);
      });

      it('knows the newest planned time the schedule accounted for, manual runs left out', async () => {
        const fnId = randomUUID();
        expect(await stores.scheduleRuns.lastPlanned(fnId)).to.equal(null);
        await stores.scheduleRuns.add(missed(fnId, CONTRACT_EPOCH + 2 * MIN, 'platform_down'), 100);
        await stores.scheduleRuns.add(ran(fnId, CONTRACT_EPOCH + 1 * MIN), 100);
        await stores.scheduleRuns.add(ran(fnId, CONTRACT_EPOCH + 9 * MIN, { manual: true }), 100);
        expect(await stores.scheduleRuns.lastPlanned(fnId)).to.equal(CONTRACT_EPOCH + 2 * MIN);
      });

      it('keeps at most keepAtMost entries per function, the newest planned', async () => {
        const fnId = randomUUID();
        const other = randomUUID();
        await stores.scheduleRuns.add(ran(other, CONTRACT_EPOCH), 3);
        for (let i = 0; i < 6; i++) await stores.scheduleRuns.add(ran(fnId, CONTRACT_EPOCH + i * MIN), 3);
        const kept = await stores.scheduleRuns.list(fnId, 10, CONTRACT_EPOCH);
        expect(kept.map((r) => r.planned_at)).to.deep.equal([5, 4, 3].map((i) => iso(CONTRACT_EPOCH + i * MIN)));
        expect(await stores.scheduleRuns.list(other, 10, CONTRACT_EPOCH)).to.have.length(1);
      });

      it("hides entries past their expiry at once, sweep removes them, and a deleted function's entries go", async () => {
        const fnId = randomUUID();
        await stores.scheduleRuns.add(ran(fnId, CONTRACT_EPOCH, { expires_at: CONTRACT_EPOCH + DAY }), 100);
        await stores.scheduleRuns.add(ran(fnId, CONTRACT_EPOCH + MIN, { expires_at: CONTRACT_EPOCH + 3 * DAY }), 100);
        await stores.scheduleRuns.add(ran(fnId, CONTRACT_EPOCH + 2 * MIN), 100);
        expect(await stores.scheduleRuns.list(fnId, 10, CONTRACT_EPOCH + 2 * DAY)).to.have.length(2);
        expectDeleted(await stores.scheduleRuns.sweep(CONTRACT_EPOCH + 2 * DAY), 1);
        expect(await stores.scheduleRuns.list(fnId, 10, CONTRACT_EPOCH)).to.have.length(2);
        expect(await stores.scheduleRuns.deleteFunction(fnId)).to.equal(2);
        expect(await stores.scheduleRuns.list(fnId, 10, CONTRACT_EPOCH)).to.deep.equal([]);
      });
    });

    describe('LogStore: a manual schedule run', () => {
      it('keeps the manual mark of a record, and no mark on others', async () => {
        const fnId = randomUUID();
        const marked = log(fnId, CONTRACT_EPOCH + 1000, { trigger: 'schedule', manual: true });
        const plain = log(fnId, CONTRACT_EPOCH, { trigger: 'schedule' });
        await stores.logs.insert([plain, marked]);
        const page = await stores.logs.list(fnId, query(), NONE, CONTRACT_EPOCH);
        expect(page.logs).to.deep.equal([stripExpiry(marked), stripExpiry(plain)]);
        expect(page.logs[1]).to.not.have.property('manual');
      });
    });
  });
}

const NONE: RetentionPolicy = { type: 'none' };

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function namespace(): string {
  return 'ns-' + randomUUID().slice(0, 8);
}

function query(overrides: Partial<LogQuery> = {}): LogQuery {
  return { status: 'all', limit: 50, page: 1, ...overrides };
}

function inClass(statusCode: number, status: StatusFilter): boolean {
  if (status === 'success') return statusCode >= 200 && statusCode < 300;
  if (status === 'error') return statusCode >= 400;
  return true;
}

let logSerial = 0;

/** A stored log; expires_at follows the policy in force when it was written, as the gateway's writer sets it. */
export function log(functionId: string, executedMs: number, fields: Partial<ExecutionLog> = {}, retention: RetentionPolicy = NONE): StoredLog {
  logSerial++;
  const statusCode = fields.status_code ?? 200;
  return {
    id: `log_${logSerial.toString(36)}${randomUUID().replaceAll('-', '').slice(0, 12)}`,
    function_id: functionId,
    status_code: statusCode,
    execution_time_ms: logSerial % 97,
    error_message: statusCode >= 400 ? `HTTP ${statusCode}` : null,
    executed_at: iso(executedMs),
    trigger: 'http',
    ...fields,
    expires_at: retention.type === 'time' ? executedMs + retention.days * DAY : null,
  };
}

/** A small deterministic generator (mulberry32), so a failing case can be replayed. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function stripExpiry(record: StoredLog): ExecutionLog {
  const { expires_at: _expiresAt, ...logRecord } = record;
  return logRecord;
}

export function functionRecord(overrides: Partial<FunctionRecord> = {}): FunctionRecord {
  return {
    function_id: randomUUID(),
    name: 'fn-' + randomUUID().slice(0, 8),
    namespace: namespace(),
    code: 'export default function handler(req, res) { res.json({ ok: true }); }',
    env: {},
    routes: [],
    timeout_seconds: 30,
    memory_mib: 128,
    active: true,
    retention: NONE,
    schedule: null,
    created_at: iso(CONTRACT_EPOCH),
    updated_at: iso(CONTRACT_EPOCH),
    ...overrides,
  };
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

export type { LogPage };
