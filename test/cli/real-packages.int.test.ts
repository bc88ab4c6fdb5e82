import { expect } from 'chai';
import { installFixtureProject, PACKAGE_FIXTURES, type FixtureProject } from '../helpers/fixture-project.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { expectSignedPut, expectZodAnswers, S3_KEY, ZOD_INVALID, ZOD_VALID } from '../helpers/real-packages.ts';
import { startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { runCli } from './helpers/run.ts';

// Real packages from npm, at the versions their lockfiles pin (test/fixtures/packages/), installed
// with `npm ci` and created through the real CLI from the fixture's folder as a user creates a
// handler (issue 30): zod 4 validating a body, the official mongodb driver talking to the MongoDB
// stand-in through the egress proxy (the machine's addresses are protected: the test allows the
// stand-in's address and port with `fnhost policy:add`, as docs/egress.md tells a user), and the
// AWS SDK's S3 client signing a request without sending it. Their bundles are 1-2 MiB with their
// source maps, over the 256 KiB the CLI sends inline, so they go as code references.

describe('real packages from npm created through the real CLI (one machine): zod 4, mongodb, @aws-sdk/client-s3', function () {
  this.timeout(300_000);
  let p: CliPlatform;
  let mongo: MongoTestServer;
  const projects: Partial<Record<keyof typeof PACKAGE_FIXTURES, FixtureProject>> = {};

  before(async () => {
    const [platform, server, zod, mongodb, s3] = await Promise.all([
      startCliPlatform(),
      startMongoServer({ useEnv: false }),
      installFixtureProject(PACKAGE_FIXTURES.zod),
      installFixtureProject(PACKAGE_FIXTURES.mongodb),
      installFixtureProject(PACKAGE_FIXTURES.s3),
    ]);
    Object.assign(projects, { zod, mongodb, s3 });
    p = platform;
    mongo = server;
  });
  after(async () => {
    await p?.stop();
    await mongo?.stop();
    for (const project of Object.values(projects)) project?.remove();
  });

  const create = async (name: string, project: FixtureProject, file: string, flags: string[] = []) => {
    const created = await runCli(['function:create', name, '--file', file, ...flags, '--output', 'json'], { env: p.env, cwd: project.dir, timeoutMs: 180_000 });
    expect(created.code, created.stderr).to.equal(0);
    const record = JSON.parse(created.stdout) as { function_id: string; code?: string; code_ref?: { digest: string; size: number } };
    // Over the inline size: held by reference in the code store, not in the record.
    expect(record.code_ref?.digest, created.stderr).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(record.code_ref!.size).to.be.greaterThan(256 * 1024);
    return record;
  };
  const invoke = async (id: string, path: string, init: RequestInit = {}) => {
    const res = await fetch(`${p.url}/invoke/${id}${path}`, init);
    const text = await res.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    return { status: res.status, body };
  };

  /** The newest record's error, for a failing call's message. */
  const lastError = async (name: string) => {
    const logs = await runCli(['function:logs', name, '--limit', '1', '--stack', '--output', 'json'], { env: p.env });
    const record = (JSON.parse(logs.stdout || '{"logs":[]}') as { logs: { error_message?: string; error_stack?: string }[] }).logs[0];
    return `${record?.error_message ?? ''}\n${record?.error_stack ?? ''}`;
  };

  it('zod 4: a valid body is answered, an invalid one gets 400 with zod’s issues', async () => {
    const fn = await create('orders-zod', projects.zod!, 'src/handler.ts');
    const post = (body: unknown) => invoke(fn.function_id, '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expectZodAnswers(await post(ZOD_VALID), await post(ZOD_INVALID));
  });

  it('mongodb: the driver reaches the stand-in through the egress proxy once a policy allows its address and port', async () => {
    const url = `mongodb://127.0.0.1:${mongo.port}/?directConnection=true&serverSelectionTimeoutMS=4000`;
    const fn = await create('visits-mongodb', projects.mongodb!, 'src/handler.js', ['--env', `MONGODB_URL=${url}`]);
    // The machine's own addresses are protected by default: the driver's connection is refused.
    const refused = await invoke(fn.function_id, '/?name=ada');
    expect(refused.status, JSON.stringify(refused.body)).to.equal(500);
    expect(await lastError('visits-mongodb')).to.match(/blocked by network policy/);
    const allowed = await runCli(['policy:add', 'allow', `127.0.0.1:${mongo.port}`, '--function', 'visits-mongodb'], { env: p.env });
    expect(allowed.code, allowed.stderr).to.equal(0);
    const first = await invoke(fn.function_id, '/?name=ada');
    expect(first.status, await lastError('visits-mongodb')).to.equal(200);
    expect(first.body).to.include({ name: 'ada', count: 1 });
    expect(first.body.ping).to.equal(1);
    const second = await invoke(fn.function_id, '/?name=ada');
    expect(second.body).to.include({ name: 'ada', count: 2 });
  });

  it('@aws-sdk/client-s3: a PutObject request signed with SigV4, without network; the signature checks out', async () => {
    const fn = await create('s3-sign', projects.s3!, 'src/handler.js');
    expectSignedPut(await invoke(fn.function_id, `/?key=${encodeURIComponent(S3_KEY)}`));
  });
});
