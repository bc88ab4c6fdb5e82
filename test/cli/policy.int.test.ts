import { expect } from 'chai';
import { startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { BIN, NEUTRAL_CWD, cleanEnv, runCli } from './helpers/run.ts';
import { TmuxSession } from './helpers/tmux.ts';

// fnhost policy:* against a real gateway (issue 29): show, set the default, add and remove one
// entry, and check, in a real terminal (tmux) and as JSON.

describe('fnhost policy: show, default, add, remove, check', function () {
  this.timeout(120_000);
  let p: CliPlatform;
  const sessions: TmuxSession[] = [];
  const fnhost = (args: string[]) => runCli(args, { env: p.env, timeoutMs: 60_000 });

  /** Runs a command in tmux to its end; its exit status and screen. */
  async function terminal(args: string[]): Promise<{ code: number; screen: string }> {
    const env = Object.fromEntries(Object.entries(cleanEnv({ ...p.env, TZ: 'UTC' })).filter((e): e is [string, string] => e[1] !== undefined));
    const session = await TmuxSession.start([process.execPath, BIN, ...args], { env, cwd: NEUTRAL_CWD, width: 200, height: 30 });
    sessions.push(session);
    const code = await session.waitForExit(60_000);
    return { code, screen: await session.screen({ history: true }) };
  }

  before(async () => {
    p = await startCliPlatform();
    expect((await fnhost(['function:create', 'hello', '--file', p.file('h.js', 'export default (req, res) => res.json({})')])).code).to.equal(0);
  });
  afterEach(async () => {
    while (sessions.length > 0) await sessions.pop()!.kill();
  });
  after(async () => {
    await p?.stop();
  });

  it('shows the global policy, sets its default and adds and removes one entry without retyping the list', async () => {
    let t = await terminal(['policy:show']);
    expect(t.code).to.equal(0);
    expect(t.screen).to.match(/Global policy\s+default: allow\s+allow:\s+\(none\)/);
    expect((await terminal(['policy:default', 'deny'])).screen).to.include('Global default: deny');
    expect((await terminal(['policy:add', 'allow', 'api.example.com'])).screen).to.include('Added api.example.com to the allow list of the global policy');
    expect((await terminal(['policy:add', 'allow', '127.0.0.1'])).code).to.equal(0);
    t = await terminal(['policy:remove', 'allow', 'api.example.com']);
    expect(t.screen).to.include('Removed api.example.com from the allow list');
    const json = await fnhost(['policy:show', '--output', 'json']);
    expect(JSON.parse(json.stdout).global).to.deep.equal({ default: 'deny', allow: ['127.0.0.1'], deny: [] });
    t = await terminal(['policy:remove', 'deny', 'nothing.example']);
    expect(t.code).to.equal(2);
    expect(t.screen).to.include('nothing.example is not in the deny list of the global policy');
    t = await terminal(['policy:add', 'allow', 'https://api.example.com/x']);
    expect(t.code).to.equal(2);
    expect(t.screen).to.match(/a URL/);
  });

  it('a function\'s own policy: added to, shown beside the global one', async () => {
    expect((await terminal(['policy:add', 'deny', '10.0.0.0/8', '--function', 'hello'])).code).to.equal(0);
    const t = await terminal(['policy:show', '--function', 'hello']);
    expect(t.screen).to.match(/Policy of hello\s+default: deny\s+allow:\s+\(none\)\s+deny:\s+10\.0\.0\.0\/8/);
    expect(t.screen).to.include('Global policy');
  });

  it('policy:check answers yes or no with the rule, the scope and the addresses, exit 0 or 1 (as kubectl auth can-i)', async () => {
    let t = await terminal(['policy:check', 'hello', '127.0.0.1:3000']);
    expect(t.code, t.screen).to.equal(0);
    expect(t.screen).to.match(/yes\s+connection to 127\.0\.0\.1:3000 is allowed \(global rule 127\.0\.0\.1\)/);
    // A port narrows an allow: the machine opened on one port only.
    expect((await terminal(['policy:add', 'allow', '127.0.0.2:3000', '--function', 'hello'])).code).to.equal(0);
    expect((await terminal(['policy:check', 'hello', '127.0.0.2:3000'])).screen).to.include('is allowed (function rule 127.0.0.2:3000)');
    t = await terminal(['policy:check', 'hello', '127.0.0.2:3001']);
    expect(t.code).to.equal(1);
    expect(t.screen).to.include('(global rule host)');
    t = await terminal(['policy:check', 'hello', '10.1.2.3:5432']);
    expect(t.code).to.equal(1);
    expect(t.screen).to.match(/no\s+connection to 10\.1\.2\.3:5432 blocked by network policy \(function rule 10\.0\.0\.0\/8\)/);
    t = await terminal(['policy:check', 'hello', '[::1]:3000']);
    expect(t.code).to.equal(1);
    expect(t.screen).to.include('(global rule host)');
    const admin = Number(new URL(p.adminUrl).port);
    const json = await fnhost(['policy:check', 'hello', `127.0.0.1:${admin}`, '--output', 'json']);
    expect(json.code).to.equal(1);
    expect(JSON.parse(json.stdout)).to.include({ allowed: false, rule: 'listener', scope: 'global', target: `127.0.0.1:${admin}` });
    const byName = JSON.parse((await fnhost(['policy:check', 'hello', 'localhost:3000', '--output', 'json'])).stdout);
    expect(byName.allowed).to.equal(false);
    expect(byName.name, 'the function\'s name, not overwritten by the name\'s decision').to.equal('hello');
    expect(byName.name_decision).to.deep.equal({ allowed: false, scope: 'function', rule: 'default' });
  });
});
