import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// A MongoDB for tests: MONGODB_URL when it is set (a real server), otherwise
// mongo-java-server (in memory) from test/mongo-server/, built once per
// machine with Maven into $FNHOST_CACHE/mongo-server/<hash of the sources>/
// (~/.cache/fnhost by default, as the cluster harness's cache)
// and started on 127.0.0.1. See test/README.md for what the stand-in lacks.

export interface MongoTestServer {
  url: string;
  /** The port the stand-in listens on (null for MONGODB_URL). */
  port: number | null;
  /** true when the stand-in runs (not a real server from MONGODB_URL). */
  standIn: boolean;
  stop(): Promise<void>;
}

const SOURCE_DIR = fileURLToPath(new URL('../mongo-server/', import.meta.url));
const MAIN_CLASS = 'fnhost.MongoServerMain';

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'target' || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else out.push(path);
  }
  return out.sort();
}

function sourceHash(): string {
  const hash = createHash('sha256');
  for (const file of sourceFiles(SOURCE_DIR)) {
    hash.update(relative(SOURCE_DIR, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** The cache every install step of the tests shares (as test/cluster/lib.sh computes it). */
function fnhostCache(): string {
  const env = process.env;
  return env['FNHOST_CACHE'] || join(env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'fnhost');
}

function requireTool(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: 'ignore' });
  if (result.error || result.status !== 0) {
    throw new Error(`the MongoDB stand-in needs \`${command}\` (Java 17+ and Maven) on PATH, or set MONGODB_URL to a real MongoDB; \`${command} ${args.join(' ')}\` failed: ${result.error?.message ?? 'exit ' + result.status}`);
  }
}

/** Builds the launcher when missing; returns the java -cp classpath. */
export function buildMongoServer(): string {
  const dir = join(fnhostCache(), 'mongo-server', sourceHash());
  const classpathFile = join(dir, 'classpath.txt');
  if (!existsSync(classpathFile)) {
    requireTool('java', ['-version']);
    requireTool('mvn', ['-v']);
    // Build in a scratch copy and rename into place, so two test runs never see half a build.
    const scratch = `${dir}.building-${process.pid}`;
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    cpSync(join(SOURCE_DIR, 'pom.xml'), join(scratch, 'pom.xml'));
    cpSync(join(SOURCE_DIR, 'src'), join(scratch, 'src'), { recursive: true });
    const build = spawnSync('mvn', ['-q', '-B', 'package', 'dependency:build-classpath', '-Dmdep.outputFile=deps.txt'], { cwd: scratch, encoding: 'utf8', timeout: 600_000 });
    if (build.status !== 0) {
      throw new Error(`building the MongoDB stand-in (mvn package in ${scratch}) failed:\n${build.stdout}\n${build.stderr}`);
    }
    const deps = readFileSync(join(scratch, 'deps.txt'), 'utf8').trim();
    const jar = join(dir, 'target', 'fnhost-mongo-server-1.jar');
    writeFileSync(join(scratch, 'classpath.txt'), `${jar}:${deps}`);
    try {
      renameSync(scratch, dir);
    } catch (err) {
      // Another run finished first; use its build.
      rmSync(scratch, { recursive: true, force: true });
      if (!existsSync(classpathFile)) throw err;
    }
  }
  return readFileSync(classpathFile, 'utf8').trim();
}

/**
 * Starts the stand-in on `port` (0: a free one), or returns MONGODB_URL when
 * it is set. stop() ends the Java process and waits for it.
 */
export async function startMongoServer(options: { port?: number; useEnv?: boolean } = {}): Promise<MongoTestServer> {
  const fromEnv = process.env['MONGODB_URL'];
  if (fromEnv && options.useEnv !== false) return { url: fromEnv, port: null, standIn: false, stop: async () => {} };
  const classpath = buildMongoServer();
  const child = spawn('java', ['-Xmx2g', '-cp', classpath, MAIN_CLASS, String(options.port ?? 0)], { stdio: ['pipe', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => fail(new Error(`the MongoDB stand-in did not print its port within 60 s; stderr: ${err}`)), 60_000);
    function fail(error: Error): void {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    }
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const match = /PORT (\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      err = (err + chunk).slice(-4000);
    });
    child.once('exit', (code, signal) => fail(new Error(`the MongoDB stand-in exited (${code ?? signal}) before listening; stderr: ${err}`)));
  });
  return { url: `mongodb://127.0.0.1:${port}`, port, standIn: true, stop: () => stopChild(child) };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stdin?.end();
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** For diagnostics: the size of the cached build, or null when none. */
export function mongoServerCacheInfo(): string | null {
  const dir = join(fnhostCache(), 'mongo-server', sourceHash());
  return existsSync(dir) ? `${dir} (${statSync(dir).mtime.toISOString()})` : null;
}
