import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { pollUntil } from '../helpers/wait.ts';

// Every install step that `make start` and `make test` take on a fresh
// machine, run here every time on a clean state: an empty HOME (so an empty
// ~/.cache/fnhost, Go, npm and Maven caches), and a stand-in package manager
// first on PATH (test/install/stand-ins/) that hides every Debian package and
// records what it was asked. A step passes when it asks for exactly the right
// packages and exits 0; the real downloads stay cached on the machine.
// (At 75cdccb the cluster step failed this way on every new machine: apt's log
// was redirected into a folder that did not exist yet.)

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const STAND_INS = fileURLToPath(new URL('./stand-ins/', import.meta.url));
const IS_ROOT = process.getuid?.() === 0;

const CLUSTER_PACKAGES = ['containerd', 'runc', 'containernetworking-plugins', 'buildah', 'iptables', 'debootstrap', 'gcc', 'libc6-dev', 'kmod', 'iproute2', 'procps', 'util-linux', 'ipset'];
const START_PACKAGES = ['bubblewrap'];
const TEST_PACKAGES = ['tmux', 'chromium', 'shellcheck', 'python3-venv', 'curl', 'jq'];

interface Clean {
  home: string;
  cache: string;
  env: NodeJS.ProcessEnv;
  /** What the stand-ins were asked, one "name args..." a call. */
  calls(name?: string): string[];
}

function cleanState(extra: NodeJS.ProcessEnv = {}): Clean {
  const home = mkdtempSync(join(tmpdir(), 'fnhost-fresh-home-'));
  const log = join(home, 'stand-in.log');
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, PATH: `${STAND_INS}:${process.env.PATH}`, STANDIN_LOG: log, STANDIN_STATE: join(home, 'stand-in-state'), ...extra };
  // Nothing may point the steps at the machine's warm caches.
  for (const name of ['FNHOST_CACHE', 'XDG_CACHE_HOME', 'GOCACHE', 'GOMODCACHE', 'GOPATH', 'npm_config_cache', 'MONGODB_URL']) delete env[name];
  return {
    home,
    cache: join(home, '.cache', 'fnhost'),
    env,
    calls: (name) => {
      const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
      return name === undefined ? lines : lines.filter((l) => l.startsWith(`${name} `));
    },
  };
}

function run(state: Clean, command: string, args: string[]) {
  const r = spawnSync(command, args, { cwd: REPO, env: state.env, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, output: `${r.stdout}${r.stderr}${r.error ? String(r.error) : ''}` };
}

/** The packages of the stand-in apt-get's install calls, in order. */
function installed(state: Clean): string[] {
  return state
    .calls('apt-get')
    .filter((l) => / install /.test(l))
    .flatMap((l) => l.replace(/^apt-get /, '').split(/\s+/).filter((w, i, all) => !w.startsWith('-') && all[i - 1] !== '-o' && w !== 'install'));
}

describe('install steps on a fresh machine (empty caches, stand-in package manager)', function () {
  this.timeout(180_000);
  const states: Clean[] = [];
  const fresh = (extra?: NodeJS.ProcessEnv) => {
    const s = cleanState(extra);
    states.push(s);
    return s;
  };
  after(() => {
    for (const s of states) rmSync(s.home, { recursive: true, force: true });
  });

  describe('Debian packages', () => {
    if (IS_ROOT) {
      it("make test's packages (tools/install/packages.sh test): updates the lists, asks for bubblewrap, tmux, chromium, shellcheck, python3-venv, curl and jq, exits 0", () => {
        const s = fresh();
        const r = run(s, 'tools/install/packages.sh', ['test']);
        expect(r.status, r.output).to.equal(0);
        expect(s.calls('apt-get')[0]).to.match(/ update/);
        expect(installed(s)).to.have.members([...START_PACKAGES, ...TEST_PACKAGES]);
        expect(existsSync(join(s.cache, 'logs', 'apt.log')), 'apt.log in an empty cache').to.equal(true);
      });

      it('a second run asks apt nothing (idempotent)', () => {
        const s = fresh();
        expect(run(s, 'tools/install/packages.sh', ['test']).status).to.equal(0);
        const before = s.calls('apt-get').length;
        const r = run(s, 'tools/install/packages.sh', ['test']);
        expect(r.status, r.output).to.equal(0);
        expect(s.calls('apt-get').length).to.equal(before);
      });

      it("make start's packages (tools/install/packages.sh start): bubblewrap only, exit 0", () => {
        const s = fresh();
        const r = run(s, 'tools/install/packages.sh', ['start']);
        expect(r.status, r.output).to.equal(0);
        expect(installed(s)).to.deep.equal(START_PACKAGES);
      });

      it("make start without a package manager that works: a warning that functions run unsandboxed, and the start goes on", () => {
        const s = fresh({ STANDIN_APT_FAIL: 'install' });
        const r = run(s, 'tools/install/packages.sh', ['start']);
        expect(r.status, r.output).to.equal(0);
        expect(r.output).to.match(/apt-get install bubblewrap failed[\s\S]*warning: without bubblewrap, functions run WITHOUT a sandbox/);
      });

      it("the test cluster's packages (test/cluster/system-deps.sh): all thirteen asked for, exit 0, apt.log in the empty cache", () => {
        const s = fresh();
        const r = run(s, 'test/cluster/system-deps.sh', []);
        expect(r.status, r.output).to.equal(0);
        expect(installed(s)).to.have.members(CLUSTER_PACKAGES);
        expect(existsSync(join(s.cache, 'logs', 'apt.log'))).to.equal(true);
      });

      it('a failing apt-get is a clear error naming the packages and the log, not a stack of shell noise', () => {
        const s = fresh({ STANDIN_APT_FAIL: 'install' });
        const r = run(s, 'tools/install/packages.sh', ['test']);
        expect(r.status).to.equal(1);
        expect(r.output).to.match(/error: apt-get install bubblewrap tmux chromium shellcheck python3-venv curl jq failed; see .*\/\.cache\/fnhost\/logs\/apt\.log/);
        expect(readFileSync(join(s.cache, 'logs', 'apt.log'), 'utf8')).to.match(/Unable to locate package/);
      });
    } else {
      it('not root: names the missing packages and the command to run, and exits non-zero', () => {
        const s = fresh();
        const r = run(s, 'tools/install/packages.sh', ['test']);
        expect(r.status).to.equal(1);
        expect(r.output).to.match(/needs these Debian packages: bubblewrap tmux chromium shellcheck python3-venv curl jq \(run as root: apt-get update && apt-get install bubblewrap tmux chromium shellcheck python3-venv curl jq\)/);
        expect(installed(s)).to.deep.equal([]);
      });
    }
  });

  describe('Go-built tools and the node base (the cluster harness)', () => {
    it('build-bins.sh all asks the Go module proxy for Kubernetes v1.37.2, etcd, helm v3.22.0, CoreDNS v1.15.0 and kube-router v2.1.0 and caches every binary', () => {
      const s = fresh();
      const r = run(s, 'test/cluster/build-bins.sh', ['all']);
      expect(r.status, r.output).to.equal(0);
      const go = s.calls('go');
      expect(go).to.include('go mod download -json k8s.io/kubernetes@v1.37.2');
      const build = go.find((l) => l.startsWith('go build '));
      expect(build, go.join('\n')).to.be.a('string');
      for (const cmd of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kube-proxy', 'kubectl']) expect(build).to.include(`k8s.io/kubernetes/cmd/${cmd}`);
      expect(build).to.include('go.etcd.io/etcd/server/v3');
      expect(build).to.include('-X k8s.io/component-base/version.gitVersion=v1.37.2');
      expect(go.some((l) => /^go install .* helm\.sh\/helm\/v3\/cmd\/helm@v3\.22\.0$/.test(l)), go.join('\n')).to.equal(true);
      expect(go.some((l) => /^go install .* github\.com\/coredns\/coredns@v1\.15\.0$/.test(l)), go.join('\n')).to.equal(true);
      expect(go.some((l) => /^go install .* github\.com\/cloudnativelabs\/kube-router\/v2\/cmd\/kube-router@v2\.1\.0$/.test(l)), go.join('\n')).to.equal(true);
      // The go.mod it wrote pins kubernetes' staging modules to the published ones.
      const mod = readFileSync(join(s.cache, 'kubernetes', 'v1.37.2', 'mod', 'go.mod'), 'utf8');
      expect(mod).to.match(/k8s\.io\/client-go => k8s\.io\/client-go v0\.37\.2/);
      for (const b of ['kube-apiserver', 'kubelet', 'kubectl', 'etcd']) expect(existsSync(join(s.cache, 'kubernetes', 'v1.37.2', 'bin', b)), b).to.equal(true);
      expect(existsSync(join(s.cache, 'tools', 'helm-v3.22.0-coredns-v1.15.0', 'bin', 'helm'))).to.equal(true);
      expect(existsSync(join(s.cache, 'tools', 'kube-router-v2.1.0', 'bin', 'kube-router'))).to.equal(true);
      // Cached now: a second run builds nothing.
      const again = run(s, 'test/cluster/build-bins.sh', ['all']);
      expect(again.status, again.output).to.equal(0);
      expect(s.calls('go').length).to.equal(go.length);
    });

    it("images.sh rootfs debootstraps the node base's Debian minbase once, from the mirror apt is configured with", () => {
      // apt's own configuration, in deb822 form as Debian 12 writes it: the security suite comes
      // first and must not be taken for the release's mirror.
      const apt = mkdtempSync(join(tmpdir(), 'fnhost-apt-etc-'));
      mkdirSync(join(apt, 'sources.list.d'));
      writeFileSync(join(apt, 'sources.list.d', 'debian.sources'), [
        'Types: deb', 'URIs: http://security.mirror.test/debian-security', 'Suites: bookworm-security', 'Components: main', '',
        'Types: deb', 'URIs: http://mirror.test/debian/', 'Suites: bookworm bookworm-updates', 'Components: main', '',
      ].join('\n'));
      const s = fresh({ APT_ETC: apt });
      const r = run(s, 'test/cluster/images.sh', ['rootfs']);
      expect(r.status, r.output).to.equal(0);
      const rootfs = join(s.cache, 'images', 'bookworm-minbase');
      expect(s.calls('debootstrap')).to.deep.equal([`debootstrap --variant=minbase bookworm ${rootfs} http://mirror.test/debian`]);
      expect(existsSync(join(rootfs, '.done'))).to.equal(true);
      rmSync(apt, { recursive: true, force: true });
    });

    it('images.sh rootfs with no apt source for bookworm fails naming FNHOST_DEBIAN_MIRROR, and takes that variable when set', () => {
      const apt = mkdtempSync(join(tmpdir(), 'fnhost-apt-etc-'));
      writeFileSync(join(apt, 'sources.list'), 'deb http://mirror.test/debian trixie main\n');
      const s = fresh({ APT_ETC: apt });
      const r = run(s, 'test/cluster/images.sh', ['rootfs']);
      expect(r.status).to.equal(1);
      expect(r.output).to.contain('no apt source for Debian bookworm').and.to.contain('FNHOST_DEBIAN_MIRROR');
      expect(s.calls('debootstrap')).to.deep.equal([]);
      const named = fresh({ APT_ETC: apt, FNHOST_DEBIAN_MIRROR: 'http://local.mirror.test/debian' });
      expect(run(named, 'test/cluster/images.sh', ['rootfs']).status).to.equal(0);
      expect(named.calls('debootstrap')[0]).to.match(/ http:\/\/local\.mirror\.test\/debian$/);
      rmSync(apt, { recursive: true, force: true });
    });

    if (IS_ROOT) {
      it("make test's first step (prebuild.sh) on a fresh machine: packages in the foreground, then every build in the background, all succeeding", async () => {
        const s = fresh();
        const r = run(s, 'test/cluster/prebuild.sh', [String(process.pid)]);
        expect(r.status, r.output).to.equal(0);
        expect(installed(s)).to.have.members(CLUSTER_PACKAGES);
        const log = join(s.cache, 'logs', 'prebuild.log');
        const done = await pollUntil('the background builds to end', async () => /background builds done \(binaries rc=(\d+), rootfs rc=(\d+)\)/.exec(readFileSync(log, 'utf8')), 120_000, 100);
        expect([done[1], done[2]], readFileSync(log, 'utf8')).to.deep.equal(['0', '0']);
        expect(s.calls('go').some((l) => l.startsWith('go build '))).to.equal(true);
        expect(s.calls('debootstrap')).to.have.length(1);
      });
    }
  });

  describe('checkov, the chart scanner (PyPI, tools/install/checkov.sh)', () => {
    const LOCK = join(REPO, 'tools/install/checkov-requirements.txt');
    const venvPattern = (cache: string) => new RegExp(`^${cache}/tools/checkov-3\\.3\\.30-[0-9a-f]{12}$`);

    it('makes a venv in the empty cache and installs exactly the pinned list into it (--no-deps), once', () => {
      const s = fresh();
      const r = run(s, 'tools/install/checkov.sh', []);
      expect(r.status, r.output).to.equal(0);
      const checkov = r.stdout.trim();
      const venv = checkov.replace(/\/bin\/checkov$/, '');
      expect(venv).to.match(venvPattern(s.cache));
      expect(s.calls('python3')).to.deep.equal([`python3 -m venv ${venv}`]);
      expect(s.calls('pip')).to.deep.equal([`pip install --disable-pip-version-check --no-input --no-deps -r ${LOCK}`]);
      expect(spawnSync(checkov, [], { encoding: 'utf8' }).stdout.trim()).to.equal('stand-in checkov');
      expect(existsSync(join(s.cache, 'logs', 'checkov.log')), 'checkov.log in the empty cache').to.equal(true);
      // Cached now: a second run installs nothing and names the same checkov.
      const again = run(s, 'tools/install/checkov.sh', []);
      expect(again.status, again.output).to.equal(0);
      expect(again.stdout.trim()).to.equal(checkov);
      expect(s.calls('python3')).to.have.length(1);
      expect(s.calls('pip')).to.have.length(1);
    });

    it('pins every package of the list to one version, checkov among them', () => {
      const lines = readFileSync(LOCK, 'utf8').split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
      expect(lines.length).to.be.above(50);
      for (const l of lines) expect(l, l).to.match(/^[A-Za-z0-9_.-]+(\[[A-Za-z0-9_,.-]+\])?==[0-9][A-Za-z0-9_.+!-]*$/);
      expect(lines).to.include('checkov==3.3.30');
    });

    it('an install that was cut off (no .done mark) is made again from an empty venv', () => {
      const s = fresh();
      const first = run(s, 'tools/install/checkov.sh', []);
      const venv = first.stdout.trim().replace(/\/bin\/checkov$/, '');
      rmSync(join(venv, '.done'));
      writeFileSync(join(venv, 'half-made'), '');
      const r = run(s, 'tools/install/checkov.sh', []);
      expect(r.status, r.output).to.equal(0);
      expect(s.calls('pip')).to.have.length(2);
      expect(existsSync(join(venv, 'half-made'))).to.equal(false);
      expect(existsSync(join(venv, '.done'))).to.equal(true);
    });

    it('a failing pip is one clear error naming the log, and leaves no venv taken for done', () => {
      const s = fresh({ STANDIN_PIP_FAIL: '1' });
      const r = run(s, 'tools/install/checkov.sh', []);
      expect(r.status).to.equal(1);
      expect(r.output).to.match(new RegExp(`error: installing checkov failed \\(python3 -m venv needs Debian's python3-venv\\); see ${s.cache}/logs/checkov\\.log`));
      expect(readFileSync(join(s.cache, 'logs', 'checkov.log'), 'utf8')).to.match(/No matching distribution found/);
      const again = run(s, 'tools/install/checkov.sh', []);
      expect(again.status).to.equal(1);
      expect(s.calls('pip')).to.have.length(2);
    });
  });

  describe('the MongoDB stand-in (Maven)', () => {
    it('is built with Maven into the empty cache, and its classpath is kept', () => {
      const s = fresh();
      const script = `const m = await import(${JSON.stringify(join(REPO, 'test/helpers/mongo-server.ts'))}); console.log(m.buildMongoServer());`;
      const r = run(s, process.execPath, ['--input-type=module', '-e', script]);
      expect(r.status, r.output).to.equal(0);
      expect(s.calls('mvn')).to.include('mvn -q -B package dependency:build-classpath -Dmdep.outputFile=deps.txt');
      expect(r.output).to.match(new RegExp(`${s.cache}/mongo-server/[0-9a-f]{16}/target/fnhost-mongo-server-1\\.jar:/stand-in/`));
    });
  });
});
