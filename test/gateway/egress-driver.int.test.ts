import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NetworkPolicy } from '@fnhost/core';
import { EgressProxy } from '../../gateway/src/egress/proxy.ts';
import { silentLogger } from '../../gateway/src/log.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { startRuntime, type RunningRuntime } from '../runtime/helpers/runtime.ts';

// A real database driver from npm (mongodb, the one the gateway's store uses) in a handler,
// talking to a real server (the MongoDB stand-in, test/README.md) through the egress proxy:
// allowed, it works unchanged; denied, it fails naming the rule. The handler file sits under
// test-output/ in the repository so that `import 'mongodb'` resolves from node_modules.

const FUNCTION_ID = '00000000-0000-4000-8000-000000000001';
const TOKEN = `${FUNCTION_ID}.runtime-secret-0123456789abcdef`;

const HANDLER = `import { MongoClient } from 'mongodb';
export default async (req, res) => {
  const client = new MongoClient(req.body.url, { directConnection: true, serverSelectionTimeoutMS: 3000 });
  try {
    await client.connect();
    const things = client.db('egress').collection('things');
    await things.insertOne({ n: req.body.n });
    res.json({ count: await things.countDocuments() });
  } catch (e) {
    res.json({ error: e.message, name: e.name, cause: e.cause?.name });
  } finally {
    await client.close().catch(() => undefined);
  }
};`;

describe('egress proxy: a real database driver (mongodb) through it', function () {
  this.timeout(120_000);
  let mongo: MongoTestServer;
  let proxy: EgressProxy;
  let rt: RunningRuntime;
  let dir: string;
  let handlerDir: string;
  const policies = new Map<string, NetworkPolicy | null>();

  before(async () => {
    mongo = await startMongoServer({ useEnv: false });
    dir = await mkdtemp(join(tmpdir(), 'fnhost-egress-driver-'));
    // The stand-in is on this machine, protected unless a rule names it (issue 29): localhost is 127.0.0.1 and ::1.
    policies.set('global', { default: 'allow', allow: ['127.0.0.1', '::1'], deny: [] });
    proxy = new EgressProxy({
      tokens: { verify: (t) => (t === TOKEN ? FUNCTION_ID : undefined) },
      knows: () => true,
      policies: { get: async (scope) => policies.get(scope) ?? null },
      logger: silentLogger,
    });
    await proxy.listenUnix(join(dir, 'egress.sock'));
    handlerDir = fileURLToPath(new URL(`../../test-output/egress-driver-${process.pid}/`, import.meta.url));
    await mkdir(handlerDir, { recursive: true });
    await writeFile(join(handlerDir, 'handler.mjs'), HANDLER);
    rt = await startRuntime({ path: join(handlerDir, 'handler.mjs'), token: TOKEN, env: { FNHOST_EGRESS_PROXY: `unix:${join(dir, 'egress.sock')}` }, timeoutMs: 20_000, memoryMiB: 256 });
  });

  after(async () => {
    await rt?.stop();
    await proxy?.close();
    await mongo?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    if (handlerDir) await rm(handlerDir, { recursive: true, force: true });
  });

  const call = async (body: unknown) => {
    const res = await fetch(rt.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status, await res.clone().text()).to.equal(200);
    return (await res.json()) as { count?: number; error?: string; name?: string };
  };

  it('works unchanged against an allowed server, and fails naming the rule once the policy denies it', async () => {
    expect(await call({ url: `mongodb://127.0.0.1:${mongo.port}`, n: 1 })).to.deep.equal({ count: 1 });
    expect(await call({ url: `mongodb://localhost:${mongo.port}`, n: 2 })).to.deep.equal({ count: 2 });
    policies.set('global', { default: 'allow', allow: ['127.0.0.1', '::1'], deny: ['127.0.0.1'] });
    await proxy.recheck('global');
    const denied = await call({ url: `mongodb://localhost:${mongo.port}`, n: 3 });
    expect(denied.name).to.equal('MongoServerSelectionError');
    expect(denied.error).to.include(`connection to localhost:${mongo.port} blocked by network policy: it resolves to 127.0.0.1 (global rule 127.0.0.1)`);
  });
});
