import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CgroupV1 } from '../../gateway/src/sandbox/cgroup.ts';
import { cpuCgroupValues, cpuSettingOf, quotaOf, SANDBOXES_PARENT_SHARES, sharesOf, weightOf, writeCpu } from '../../gateway/src/sandbox/cpu.ts';

// The CPU of each sandbox (gateway/src/sandbox/cpu.ts): the mapping from a function's CPU setting to
// cgroup v1 and v2 values, and the files written (a temporary folder stands for /sys/fs/cgroup).
// The real thing: test/gateway/attack/cpu-children.int.test.ts.

describe('sandbox CPU: the mapping from a function\'s cpu setting to cgroup values', () => {
  it('no setting: one CPU\'s weight (1024 shares; v2 weight 39, what runc and the kubelet make of 1024), no ceiling', () => {
    expect(cpuCgroupValues({ requestMillicores: null, limitMillicores: null })).to.deep.equal({ v1: { shares: 1024, quotaUs: -1, periodUs: 100_000 }, v2: { weight: 39, max: 'max 100000' } });
  });

  it('a request maps to shares as the kubelet does (millicores * 1024 / 1000, at least 2, at most 262144)', () => {
    expect(sharesOf(1000)).to.equal(1024);
    expect(sharesOf(250)).to.equal(256);
    expect(sharesOf(1)).to.equal(2);
    expect(sharesOf(999_999)).to.equal(262_144);
  });

  it('a limit maps to a quota per 100 ms period (at least 1 ms); none means no quota', () => {
    expect(quotaOf(500)).to.equal(50_000);
    expect(quotaOf(2000)).to.equal(200_000);
    expect(quotaOf(1)).to.equal(1_000);
    expect(quotaOf(null)).to.equal(-1);
  });

  it('v2 weight from shares: the kernel\'s and runc\'s conversion (2 -> 1, 262144 -> 10000)', () => {
    expect(weightOf(2)).to.equal(1);
    expect(weightOf(262_144)).to.equal(10_000);
    expect(weightOf(1024)).to.equal(39);
    const v = cpuCgroupValues({ requestMillicores: 250, limitMillicores: 500 });
    expect(v).to.deep.equal({ v1: { shares: 256, quotaUs: 50_000, periodUs: 100_000 }, v2: { weight: 10, max: '50000 100000' } });
  });

  it('takes the API\'s quantities (cluster mode\'s spec.cpu units)', () => {
    expect(cpuSettingOf(undefined)).to.deep.equal({ requestMillicores: null, limitMillicores: null });
    expect(cpuSettingOf({ request: '250m', limit: '1.5' })).to.deep.equal({ requestMillicores: 250, limitMillicores: 1500 });
    expect(cpuSettingOf({ request: null, limit: '500m' })).to.deep.equal({ requestMillicores: null, limitMillicores: 500 });
  });
});

describe('sandbox CPU: the files written (a temporary folder stands for the cgroup mount)', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'fnhost-cgroup-cpu-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('v1: cpu.cfs_period_us, cpu.cfs_quota_us and cpu.shares', async () => {
    writeCpu(root, 1, cpuCgroupValues({ requestMillicores: 500, limitMillicores: 250 }));
    expect(await readFile(join(root, 'cpu.shares'), 'utf8')).to.equal('512');
    expect(await readFile(join(root, 'cpu.cfs_quota_us'), 'utf8')).to.equal('25000');
    expect(await readFile(join(root, 'cpu.cfs_period_us'), 'utf8')).to.equal('100000');
    expect(existsSync(join(root, 'cpu.weight'))).to.equal(false);
  });

  it('v2: cpu.weight and cpu.max ("max" without a limit)', async () => {
    writeCpu(root, 2, cpuCgroupValues({ requestMillicores: null, limitMillicores: null }));
    expect(await readFile(join(root, 'cpu.weight'), 'utf8')).to.equal('39');
    expect(await readFile(join(root, 'cpu.max'), 'utf8')).to.equal('max 100000');
    writeCpu(root, 2, cpuCgroupValues({ requestMillicores: 2000, limitMillicores: 2000 }));
    expect(await readFile(join(root, 'cpu.weight'), 'utf8')).to.equal('79');
    expect(await readFile(join(root, 'cpu.max'), 'utf8')).to.equal('200000 100000');
    expect(existsSync(join(root, 'cpu.shares'))).to.equal(false);
  });

  it('v1 groups: the sandboxes\' parent weighs below the gateway; each runtime joins a cpu group; a CPU setting is written only when it changes', async function () {
    for (const c of ['memory', 'pids', 'cpu']) {
      await mkdir(join(root, c));
      await writeFile(join(root, c, 'cgroup.procs'), '');
    }
    const cgroups = await CgroupV1.detect('fnhost-test', root);
    if (process.getuid?.() !== 0) {
      expect(cgroups).to.equal(undefined);
      return;
    }
    expect(cgroups!.cpu).to.equal(true);
    expect(await readFile(join(root, 'cpu', 'fnhost-test', 'cpu.shares'), 'utf8')).to.equal(String(SANDBOXES_PARENT_SHARES));
    expect(SANDBOXES_PARENT_SHARES).to.be.below(1024);
    const group = cgroups!.create('abc', undefined, 384 * 1024 * 1024, 256);
    const dir = join(root, 'cpu', 'fnhost-test', 'abc');
    expect(group.procs).to.include(join(dir, 'cgroup.procs'));
    expect(existsSync(join(dir, 'cpu.shares')), 'the default needs no write').to.equal(false);
    group.setCpu({ requestMillicores: null, limitMillicores: null });
    expect(existsSync(join(dir, 'cpu.shares')), 'still the default: no write').to.equal(false);
    group.setCpu({ requestMillicores: 250, limitMillicores: 500 });
    expect(await readFile(join(dir, 'cpu.shares'), 'utf8')).to.equal('256');
    expect(await readFile(join(dir, 'cpu.cfs_quota_us'), 'utf8')).to.equal('50000');
    group.setCpu({ requestMillicores: null, limitMillicores: null });
    expect(await readFile(join(dir, 'cpu.shares'), 'utf8'), 'back to the default: written').to.equal('1024');
    expect(await readFile(join(dir, 'cpu.cfs_quota_us'), 'utf8')).to.equal('-1');
  });

  it('v1 without a cpu controller: memory and pids only', async function () {
    for (const c of ['memory', 'pids']) {
      await mkdir(join(root, c));
      await writeFile(join(root, c, 'cgroup.procs'), '');
    }
    const cgroups = await CgroupV1.detect('fnhost-test', root);
    if (process.getuid?.() !== 0) return expect(cgroups).to.equal(undefined);
    expect(cgroups!.cpu).to.equal(false);
    const group = cgroups!.create('abc', undefined, 384 * 1024 * 1024, 256);
    expect(group.procs).to.have.length(2);
    group.setCpu({ requestMillicores: 250, limitMillicores: null });
    expect(existsSync(join(root, 'cpu'))).to.equal(false);
  });
});
