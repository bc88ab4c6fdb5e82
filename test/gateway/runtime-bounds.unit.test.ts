import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import { ConnectionCounts, RefusalLog, subjectFields } from '../../gateway/src/internal/connection-bound.ts';
import { ConsoleRate, ConsoleRateError, ExecutionIds } from '../../gateway/src/internal/console-rate.ts';
import { addConsoleRoute } from '../../gateway/src/internal/console.ts';
import { errorMiddleware } from '../../gateway/src/http/errors.ts';
import type { Logger } from '../../gateway/src/log.ts';
import { loadConfig } from '../../gateway/src/config.ts';
import { EndpointIndex } from '../../gateway/src/cluster/endpoints.ts';

// The bounds on what runtimes ask of the gateway (issue 27 points 2 and 5): the pure parts of the
// connection bound and of the console rate bound, and the console route's cheap refusal of ids
// that name no execution of the function (a counting stand-in for the store: a unit test).

describe('runtime bounds', () => {
  describe('ConnectionCounts', () => {
    it('admits up to the limit per key and gives places back', () => {
      const c = new ConnectionCounts(2);
      expect(c.tryAcquire('a')).to.equal(true);
      expect(c.tryAcquire('a')).to.equal(true);
      expect(c.tryAcquire('a')).to.equal(false);
      expect(c.tryAcquire('b')).to.equal(true);
      c.release('a');
      expect(c.tryAcquire('a')).to.equal(true);
      c.release('b');
      expect(c.count('b')).to.equal(0);
      expect(c.keys).to.equal(1);
    });
    it('refuses a limit that is not a positive integer, naming it', () => {
      expect(() => new ConnectionCounts(0)).to.throw(RangeError, /got 0/);
    });
    it('names the subject of a key in log lines', () => {
      expect(subjectFields('fn-1')).to.deep.equal({ function_id: 'fn-1' });
      expect(subjectFields('sandbox:ab12')).to.deep.equal({ sandbox: 'ab12' });
      expect(subjectFields('address:10.0.0.7')).to.deep.equal({ address: '10.0.0.7' });
    });
  });

  describe('RefusalLog', () => {
    it('logs one line per reason and subject per interval, carrying the count of the rest', () => {
      const lines: Array<{ msg: string; fields: Record<string, unknown> }> = [];
      const logger = { warn: (msg: string, fields: Record<string, unknown>) => lines.push({ msg, fields }) } as unknown as Logger;
      let t = 0;
      const log = new RefusalLog(logger, { intervalMs: 1000, now: () => t });
      for (let i = 0; i < 50; i++) log.refused('console_rate', 'fn-1', 'refused', { function_id: 'fn-1' });
      log.refused('console_rate', 'fn-2', 'refused', { function_id: 'fn-2' });
      expect(lines).to.have.length(2);
      t = 1000;
      log.refused('console_rate', 'fn-1', 'refused', { function_id: 'fn-1' });
      expect(lines).to.have.length(3);
      expect(lines[2]!.fields).to.include({ function_id: 'fn-1', reason: 'console_rate', refused_since_last_line: 49 });
    });
  });

  describe('ConsoleRate', () => {
    it('charges bytes and posts per function and refuses past either with a Retry-After', () => {
      const rate = new ConsoleRate({ bytesPerSecond: 1000, burstBytes: 4000, postsPerSecond: 2, burstPosts: 3 });
      rate.charge('a', 4000, 0);
      let refused: unknown;
      try {
        rate.charge('a', 1000, 0);
      } catch (err) {
        refused = err;
      }
      expect(refused).to.be.instanceOf(ConsoleRateError);
      expect((refused as ConsoleRateError).status).to.equal(429);
      expect((refused as ConsoleRateError).retryAfterSeconds).to.equal(1);
      expect((refused as Error).message).to.match(/1000 bytes a second/);
      // Another function has its own buckets.
      rate.charge('b', 10, 0);
      rate.charge('b', 10, 0);
      expect(() => rate.charge('b', 10, 0)).to.not.throw();
      expect(() => rate.charge('b', 10, 0)).to.throw(ConsoleRateError, /2 posts a second/);
      // A refused post took nothing: after a second, 1000 bytes pass.
      expect(() => rate.charge('a', 1000, 1000)).to.not.throw();
    });
  });

  describe('ExecutionIds', () => {
    it('knows running executions and ended ones for a while, per function, bounded', () => {
      const ids = new ExecutionIds({ keptMs: 1000, maxPerFunction: 3 });
      ids.began('f', 'log_1');
      ids.began('f', 'log_2');
      expect(ids.knows('f', 'log_1', 0)).to.equal(true);
      expect(ids.knows('g', 'log_1', 0)).to.equal(false);
      ids.ended('f', 'log_1', 100);
      expect(ids.knows('f', 'log_1', 1100)).to.equal(true);
      expect(ids.knows('f', 'log_1', 1101)).to.equal(false);
      // Running ones stay known however long they run.
      expect(ids.knows('f', 'log_2', 1_000_000)).to.equal(true);
      ids.began('f', 'log_3');
      ids.began('f', 'log_4');
      expect(ids.size('f')).to.equal(3);
      expect(ids.knows('f', 'log_1', 0)).to.equal(false); // the oldest went first
      ids.ended('f', 'log_2', 0);
      ids.ended('f', 'log_3', 0);
      ids.ended('f', 'log_4', 0);
      ids.began('f', 'log_5');
      ids.ended('f', 'log_5', 5000);
      // The ended ones past their time are dropped as later ones end.
      expect(ids.size('f')).to.equal(1);
      expect(ids.knows('f', 'log_5', 5000)).to.equal(true);
    });

    it('keeps the newest ids in order through many evictions and sweeps (the order queue is compacted as it goes)', () => {
      const ids = new ExecutionIds({ keptMs: 1000, maxPerFunction: 100 });
      // 5,000 calls, 10 in flight, one a millisecond: the bound evicts the oldest, ended ones past their time are swept.
      for (let i = 0; i < 5000; i++) {
        ids.began('f', `log_${i}`);
        if (i >= 10) ids.ended('f', `log_${i - 10}`, i);
      }
      expect(ids.size('f')).to.equal(100);
      for (let i = 4900; i < 5000; i++) expect(ids.knows('f', `log_${i}`, 5000), `log_${i}`).to.equal(true);
      expect(ids.knows('f', 'log_4899', 5000)).to.equal(false);
      // Calls stop; long after, one more ends: the ended ones past their time are swept up to the oldest still running.
      ids.ended('f', 'log_4995', 100_000);
      expect(ids.size('f')).to.equal(10);
      for (let i = 4990; i < 5000; i++) expect(ids.knows('f', `log_${i}`, 100_000), `log_${i}`).to.equal(true);
      // The rest end; a sweep a second later keeps only the one that ended within keptMs.
      for (let i = 4990; i < 5000; i++) if (i !== 4995) ids.ended('f', `log_${i}`, 200_000);
      expect(ids.knows('f', 'log_4999', 201_001)).to.equal(false);
      ids.ended('f', 'log_4999', 202_000);
      expect(ids.size('f')).to.equal(1);
      expect(ids.knows('f', 'log_4999', 202_000)).to.equal(true);
      expect(ids.knows('f', 'log_4990', 202_000)).to.equal(false);
    });
  });

  describe('the console route', () => {
    let server: Server;
    let url: string;
    const calls: Array<{ what: string; ids: string[] }> = [];
    const executions = new ExecutionIds();
    let allExecutionsHere = true;

    before(async () => {
      const router = new Router({ prefix: '/internal/v1' });
      router.use(async (ctx, next) => {
        ctx.state.functionId = 'fn-a';
        await next();
      });
      addConsoleRoute(router, {
        insight: {
          putConsole: async (_fn: string, outputs: Array<{ logId: string }>) => {
            calls.push({ what: 'put', ids: outputs.map((o) => o.logId) });
            return outputs.map(() => false);
          },
        } as never,
        functions: { byId: () => undefined },
        now: () => 0,
        flushRecords: async () => {
          calls.push({ what: 'flush', ids: [] });
        },
        enabled: true,
        rate: new ConsoleRate({ bytesPerSecond: 1024, burstBytes: 64 * 1024, postsPerSecond: 1000, burstPosts: 1000 }),
        executions,
        get allExecutionsHere() {
          return allExecutionsHere;
        },
      });
      const app = new Koa();
      app.use(errorMiddleware({ error: () => undefined } as unknown as Logger));
      app.use(router.routes());
      server = createServer(app.callback());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal/v1/console`;
    });
    after(() => server.close());

    const post = (ids: string[]) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ executions: ids.map((id) => ({ id, lines: [[0, 'o', 'hi']] })) }) });

    it('does no store work for ids that name no execution of the function (one machine)', async () => {
      calls.length = 0;
      expect((await post(['log_nosuch1', 'log_nosuch2'])).status).to.equal(204);
      expect(calls).to.deep.equal([]);
    });

    it('stores a known execution\'s output, flushing the queue once when its record is not written yet', async () => {
      calls.length = 0;
      executions.began('fn-a', 'log_mine');
      expect((await post(['log_mine', 'log_nosuch'])).status).to.equal(204);
      expect(calls).to.deep.equal([{ what: 'put', ids: ['log_mine'] }, { what: 'flush', ids: [] }, { what: 'put', ids: ['log_mine'] }]);
    });

    it('cluster mode: stores unknown ids with one write and no flush (another replica may have run them)', async () => {
      calls.length = 0;
      allExecutionsHere = false;
      expect((await post(['log_elsewhere'])).status).to.equal(204);
      expect(calls).to.deep.equal([{ what: 'put', ids: ['log_elsewhere'] }]);
      allExecutionsHere = true;
    });

    it('refuses past the rate bound with 429 and Retry-After before reading the body', async () => {
      calls.length = 0;
      const big = 'x'.repeat(8000);
      let last: Response | undefined;
      for (let i = 0; i < 20 && last?.status !== 429; i++) {
        last = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ executions: [{ id: 'log_nosuch', lines: [[0, 'o', big]] }] }) });
      }
      expect(last!.status).to.equal(429);
      expect(last!.headers.get('retry-after')).to.match(/^\d+$/);
      expect(((await last!.json()) as { error: string }).error).to.equal('console_rate');
    });
  });
});

describe('runtime bounds: settings', () => {
  it('has the documented defaults, and the egress bound follows a raised tunnel cap', () => {
    const c = loadConfig({});
    expect(c.runtimeConnections).to.deep.equal({ internalPerFunction: 64, egressPerFunction: 128, firstRequestTimeoutMs: 10_000 });
    expect(c.consoleRate).to.deep.equal({ bytesPerSecond: 1024 * 1024, burstBytes: 8 * 1024 * 1024, postsPerSecond: 50, burstPosts: 100 });
    expect(loadConfig({ FNHOST_EGRESS_MAX_CONNECTIONS: '100' }).runtimeConnections.egressPerFunction).to.equal(200);
  });
  it('refuses bad values naming the variable and the rule', () => {
    expect(() => loadConfig({ FNHOST_EGRESS_CONNECTIONS_PER_FUNCTION: '10' })).to.throw(/FNHOST_EGRESS_CONNECTIONS_PER_FUNCTION=10 is below FNHOST_EGRESS_MAX_CONNECTIONS=64/);
    expect(() => loadConfig({ FNHOST_CONSOLE_BURST_BYTES: '1000' })).to.throw(/FNHOST_CONSOLE_BURST_BYTES=1000 is out of range: use 4194304/);
    expect(() => loadConfig({ FNHOST_INTERNAL_CONNECTIONS_PER_FUNCTION: 'many' })).to.throw(/FNHOST_INTERNAL_CONNECTIONS_PER_FUNCTION="many" is not an integer/);
  });
});

describe('runtime bounds: which function a pod address is (cluster mode refusal logs)', () => {
  it('finds the Service of a ready or starting pod\'s address from the EndpointSlices', () => {
    const idx = new EndpointIndex();
    const slice = (name: string, service: string, endpoints: Array<{ addresses: string[]; conditions: { ready: boolean } }>) => ({
      metadata: { name, namespace: 'ns', labels: { 'kubernetes.io/service-name': service } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints,
    });
    idx.apply({ key: 'ns/a', object: slice('a', 'fn-a', [{ addresses: ['10.0.0.7'], conditions: { ready: true } }]) });
    idx.apply({ key: 'ns/b', object: slice('b', 'fn-b', [{ addresses: ['10.0.0.8'], conditions: { ready: false } }]) });
    expect(idx.serviceOfAddress('10.0.0.7')).to.equal('ns/fn-a');
    expect(idx.serviceOfAddress('10.0.0.8')).to.equal('ns/fn-b');
    expect(idx.serviceOfAddress('10.0.0.9')).to.equal(undefined);
  });
});
