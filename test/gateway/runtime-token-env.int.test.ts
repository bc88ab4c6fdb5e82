import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';

// The runtime token out of every environment a handler can read (issue 28): a
// handler that reads /proc/self/environ itself, starts children that read
// their own, their parent's (the runtime's) and PID 1's environ, and reads
// in a sandbox every /proc/<pid>/environ (all the function's own), finds no FNHOST_RUNTIME_TOKEN with a value,
// in each one-machine setup: sandboxed or not, a runtime from the warm pool or
// one started for the function (FNHOST_WARM_POOL=0: the token in its initial
// environment, which /proc/<pid>/environ shows unless the runtime blanks it).
// The KV call shows the runtime still has its token.

const SNOOP = `
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
const CREDENTIAL = /FNHOST_(RUNTIME|SPECIALIZE)_TOKEN=[^\\0\\n]+/;
const run = (file, args) => { try { return execFileSync(file, args, { encoding: 'latin1', timeout: 5000 }); } catch (e) { return 'failed: ' + (e.stderr || e.message).slice(0, 100); } };
export default async (req, res) => {
  const sources = {
    'fs /proc/self/environ': (() => { try { return readFileSync('/proc/self/environ', 'latin1'); } catch (e) { return 'failed: ' + e.code; } })(),
    'child /proc/self/environ': run('cat', ['/proc/self/environ']),
    'child /proc/$PPID/environ': run('/bin/sh', ['-c', 'cat /proc/$PPID/environ']),
    'child /proc/1/environ': run('cat', ['/proc/1/environ']),
    'child env': run('env', []),
  };
  // In a sandbox (its own PID namespace) every process there is the function's; without one, /proc is the machine's.
  if (req.query.all === '1') for (const pid of readdirSync('/proc').filter((n) => /^\\d+$/.test(n)).slice(0, 2000)) {
    try { sources['/proc/' + pid + '/environ'] = readFileSync('/proc/' + pid + '/environ', 'latin1'); } catch {}
  }
  const found = Object.entries(sources).filter(([, text]) => CREDENTIAL.test(text)).map(([where, text]) => where + ': ' + text.match(CREDENTIAL)[0].slice(0, 30));
  await kv.set('k', 'v');
  res.json({ found, runtimeEnvironRead: /FNHOST_|PATH=/.test(sources['child /proc/$PPID/environ']), kv: await kv.get('k'), readable: Object.keys(sources).length });
};`;

const SETUPS: Array<{ name: string; env: Record<string, string>; sandboxed: boolean }> = [
  { name: 'sandboxed, from the warm pool', env: {}, sandboxed: true },
  { name: 'sandboxed, started for the function (no warm pool)', env: { FNHOST_WARM_POOL: '0' }, sandboxed: true },
  { name: 'unsandboxed, from the warm pool', env: { FNHOST_SANDBOX: 'off' }, sandboxed: false },
  { name: 'unsandboxed, started for the function (no warm pool)', env: { FNHOST_SANDBOX: 'off', FNHOST_WARM_POOL: '0' }, sandboxed: false },
];

describe('the runtime token is in no environment a handler or its children can read (one machine)', function () {
  this.timeout(120_000);

  for (const setup of SETUPS) {
    it(setup.name, async () => {
      let gw: RunningGateway | undefined;
      try {
        gw = await startGateway({ env: setup.env });
        const headers = { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' };
        const info = await (await fetch(`${gw.url}/api/v1/info`, { headers })).json();
        expect(info.sandbox.enabled, gw.output()).to.equal(setup.sandboxed);
        const created = await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers, body: JSON.stringify({ name: 'snoop', code: SNOOP, timeout_seconds: 60 }) });
        const fn = await created.json();
        expect(created.status, JSON.stringify(fn)).to.equal(201);
        const r = await fetch(`${gw.url}/invoke/${fn.function_id}?all=${setup.sandboxed ? 1 : 0}`);
        const body = await r.text();
        expect(r.status, body).to.equal(200);
        const seen = JSON.parse(body);
        expect(seen.kv, 'the runtime still holds its token for KV').to.equal('v');
        // The runtime's own environ was read (the attack reached it), and held no token.
        expect(seen.runtimeEnvironRead, body).to.equal(true);
        expect(seen.found, body).to.deep.equal([]);
      } finally {
        await gw?.stop();
      }
    });
  }
});
