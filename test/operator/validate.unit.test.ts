import { expect } from 'chai';
import { limits } from '@fnhost/core';
import { checkSchedule, checkSpec, checkThrowaway, makeCodeChecker } from '../../operator/src/validate.ts';
import { derivedFunctionId } from '../../operator/src/names.ts';
import { loadSettings, SettingsError } from '../../operator/src/settings.ts';
import { fnResource, testSettings, TOKEN_KEY } from './fixtures.ts';

describe('operator spec checks beyond the schema', () => {
  const settings = testSettings({ FNHOST_MAX_TIMEOUT_SECONDS: '60' });

  it('a throwaway version runs only as a Function of its namespace it names, with that id (no borrowed identity)', () => {
    const original = fnResource({}, { name: 'pay', namespace: 'team-a' });
    const labels = { 'fnhost.dev/throwaway': 'replay', 'fnhost.dev/replay-of': 'pay' };
    const own = fnResource({ functionId: derivedFunctionId('team-a', 'pay') }, { name: 'pay-rp-ab12c', namespace: 'team-a', labels });
    expect(checkThrowaway(own, original)).to.equal(null);
    expect(checkThrowaway(fnResource({}, { name: 'plain', namespace: 'team-a' }), null), 'not a throwaway: not checked').to.equal(null);
    // Another namespace's id, or its own derived id: refused.
    const borrowed = fnResource({ functionId: derivedFunctionId('team-b', 'secret-fn') }, { name: 'pay-rp-ab12c', namespace: 'team-a', labels });
    expect(checkThrowaway(borrowed, original)!.reason).to.equal('InvalidThrowaway');
    expect(checkThrowaway(borrowed, original)!.message).to.contain(derivedFunctionId('team-a', 'pay'));
    expect(checkThrowaway(fnResource({}, { name: 'pay-rp-ab12c', namespace: 'team-a', labels }), original)!.reason).to.equal('InvalidThrowaway');
    // No such original, or the original is itself a throwaway.
    expect(checkThrowaway(own, null)!.message).to.contain('"pay"');
    expect(checkThrowaway(own, fnResource({}, { name: 'pay', namespace: 'team-a', labels: { 'fnhost.dev/throwaway': 'replay', 'fnhost.dev/replay-of': 'x' } }))!.reason).to.equal('InvalidThrowaway');
  });

  it('accepts a valid Function', () => {
    expect(checkSpec(fnResource({ schedule: { cron: '*/5 * * * *', timezone: 'Europe/Paris' } }), settings)).to.equal(null);
  });

  it('a timeout above the platform maximum names both numbers and the setting', () => {
    const p = checkSpec(fnResource({ timeoutSeconds: 120 }), settings)!;
    expect(p.reason).to.equal('TimeoutAboveMaximum');
    expect(p.message).to.contain('120').and.to.contain('60').and.to.contain('FNHOST_MAX_TIMEOUT_SECONDS');
  });

  it('an unknown timezone or an impossible date is an InvalidSchedule of the schedule alone (the function itself is valid)', () => {
    const unknownZone = fnResource({ schedule: { cron: '0 * * * *', timezone: 'Mars/Olympus' } });
    expect(checkSpec(unknownZone, settings)).to.equal(null);
    expect(checkSchedule(unknownZone)).to.include({ reason: 'InvalidSchedule' });
    expect(checkSchedule(fnResource({ schedule: { cron: '0 0 31 2 *' } }))!.message).to.contain('0 0 31 2 *');
    expect(checkSchedule(fnResource({ schedule: { cron: '*/5 * * * *', timezone: 'Europe/Paris' } }))).to.equal(null);
  });

  it('scaling: min above max, or scaleToZero with a floor above zero, is InvalidScaling', () => {
    expect(checkSpec(fnResource({ scaling: { minReplicas: 5, maxReplicas: 2 } }), settings)).to.include({ reason: 'InvalidScaling' });
    const both = checkSpec(fnResource({ scaling: { minReplicas: 1 }, scaleToZero: { idleSeconds: 60 } }), settings)!;
    expect(both.reason).to.equal('InvalidScaling');
    expect(both.message).to.contain('minReplicas');
    expect(checkSpec(fnResource({ scaling: { minReplicas: 0, maxReplicas: 3, targetConcurrency: 2 }, scaleToZero: { idleSeconds: 60 } }), settings)).to.equal(null);
  });

  it('cpu: a quantity within FNHOST_CPU_LIMIT, the request not above the limit', () => {
    const s = testSettings({ FNHOST_CPU_LIMIT: '2' });
    expect(checkSpec(fnResource({ cpu: { request: '250m', limit: '1500m' } }), s)).to.equal(null);
    const above = checkSpec(fnResource({ cpu: { limit: '3' } }), s)!;
    expect(above.reason).to.equal('CpuAboveMaximum');
    expect(above.message).to.contain('3').and.to.contain('FNHOST_CPU_LIMIT');
    expect(checkSpec(fnResource({ cpu: { request: '2500m' } }), s)).to.include({ reason: 'CpuAboveMaximum' });
    expect(checkSpec(fnResource({ cpu: { request: '1', limit: '500m' } }), s)).to.include({ reason: 'InvalidCpu' });
    expect(checkSpec(fnResource({ cpu: { request: 'lots' } }), s)!.message).to.contain('"lots"');
  });

  it('a name too long for the CronJob, reserved env names and oversized code are refused', () => {
    expect(checkSpec(fnResource({}, { name: 'x'.repeat(41) }), settings)).to.include({ reason: 'NameTooLong' });
    expect(checkSpec(fnResource({ env: [{ name: 'FNHOST_TOKEN', value: 'x' }] }), settings)).to.include({ reason: 'InvalidEnv' });
    expect(checkSpec(fnResource({ code: 'x'.repeat(limits.MAX_CODE_BYTES + 1) }), settings)).to.include({ reason: 'CodeTooLarge' });
  });

  describe('code parsing', function () {
    this.timeout(30_000);
    const check = makeCodeChecker();

    it('accepts ESM and CommonJS modules', async () => {
      expect(await check('export default async function (req, res) { res.json({ ok: await Promise.resolve(1) }) }')).to.equal(null);
      expect(await check('import { createHash } from "node:crypto";\nexport const handler = (req, res) => res.send(createHash("sha1").digest("hex"));')).to.equal(null);
      expect(await check('module.exports = (req, res) => { return res.send("hi") }')).to.equal(null);
      expect(await check('const x = 1;\nawait Promise.resolve(x);\nexport default () => x;')).to.equal(null);
    });

    it('refuses code that does not parse, naming the error and the line', async () => {
      const p = await check('export default function (req, res) {\n  res.json({ a: 1 }\n}\n');
      expect(p).to.include({ reason: 'CodeDoesNotParse' });
      expect(p!.message).to.match(/SyntaxError/).and.to.match(/line \d/);
      const cjs = await check('module.exports = (req, res) => {');
      expect(cjs).to.include({ reason: 'CodeDoesNotParse' });
      expect(cjs!.message).to.contain('SyntaxError');
    });
  });

  it('settings name the bad variable and value', () => {
    expect(() => loadSettings({})).to.throw(SettingsError, /FNHOST_TOKEN_KEY/);
    expect(() => loadSettings({ FNHOST_TOKEN_KEY: TOKEN_KEY, FNHOST_MAX_TIMEOUT_SECONDS: '901' })).to.throw(/FNHOST_MAX_TIMEOUT_SECONDS.*"901"/);
    expect(() => loadSettings({ FNHOST_TOKEN_KEY: TOKEN_KEY, FNHOST_GATEWAY_URL: 'ftp://x' })).to.throw(/FNHOST_GATEWAY_URL/);
    expect(() => loadSettings({ FNHOST_TOKEN_KEY: TOKEN_KEY, FNHOST_IMAGE_PULL_POLICY: 'Sometimes' })).to.throw(/Sometimes/);
    for (const bad of ['https://gw:3128', 'http://gw', 'http://gw:3128/x', 'http://u:p@gw:3128', 'gw:3128']) {
      expect(() => loadSettings({ FNHOST_TOKEN_KEY: TOKEN_KEY, FNHOST_EGRESS_PROXY_URL: bad }), bad).to.throw(SettingsError, /FNHOST_EGRESS_PROXY_URL must be http:\/\/host:port/);
    }
    expect(() => loadSettings({ FNHOST_TOKEN_KEY: TOKEN_KEY, FNHOST_RETRY_PERIOD_SECONDS: '20' })).to.throw(/retry period < renew deadline/);
    const s = loadSettings({ FNHOST_TOKEN_KEY: TOKEN_KEY }, { namespace: 'ops', host: 'h' });
    expect(s).to.include({ runtimeImage: 'localhost/fnhost-runtime:dev', maxTimeoutSeconds: 900, leaseNamespace: 'ops', gatewayUrl: s.publicUrl });
  });
});
