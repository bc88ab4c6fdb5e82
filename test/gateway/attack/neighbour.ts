import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { readdir, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { expect } from 'chai';
import { isAlive } from '../harness.ts';

// The attack suite's yardstick (issue 27): while one client or one function attacks a
// shared resource, a neighbour function called from another client address keeps being
// served. Each attack test measures the neighbour quiet, then during the attack, then
// after it, and checks the same rule:
//   - the gateway is the same process at the end;
//   - during the attack the neighbour answers >= 95 % of its calls, with a p95 at most
//     5x its quiet p95 (a floor keeps a sub-millisecond quiet p95 from making the bound
//     a coin toss on a loaded 2-core machine). The quiet p95 is measured before the attack
//     and, when the p95 during it is over the bound, again after it, and the larger counts:
//     other work on a shared machine (issue 30: two busy loops per core and more) changes
//     the neighbour's latency over the seconds of a test, and a baseline taken at a
//     lighter load than the attack ran at made the bound fail without any fault of the
//     gateway. The attack is over then, so its own cost is not in the second baseline;
//   - once the attack ends every call succeeds.
// The neighbour's client address is 127.0.0.2, so a per-client bound that reaches the
// attacker (127.0.0.1) never reaches it: a bound that refused everyone would fail here.
//
// The p95 bound also allows what the machine adds to any call meanwhile: beside the neighbour, a
// control (a bare node:http server in a process of its own, called from the same client and
// process) is probed during the attack, and its p95 then is added to the bound. The client is the
// test's own process, which in several attacks also runs the attacker (20,000 half-sent
// connections, say): its event loop's delays, and the machine's load (issue 30: at load 10 a
// neighbour's p95 of 400 ms met a bound of 383 ms while its quiet p95 was 13-77 ms), reach the
// control as much as the neighbour, while a gateway that starves its own callers slows only the
// neighbour. The control counts for at most the bound itself (p95Bound).

export const NEIGHBOUR_ADDRESS = '127.0.0.2';

/**
 * The control is a probe, not a load: one call, then this pause. Called back to back it answered
 * ≈ 2,000 calls a second, and it and the test's client used most of a core during every attack
 * (a CPU sample of code-fetch-flood: the test's process 55 %, the control 30 %, the gateway 20 %),
 * load that the neighbour's quiet baseline, measured without the control, never had (issue 30).
 */
const CONTROL_PAUSE_MS = 10;
/**
 * The pause after each of the neighbour's calls during an attack. Each call writes an execution
 * record, and the data folder's growth bounds (console-flood, kv-fill) allow for them: back to
 * back on a quiet machine the two callers made 7,000 calls a second (27,887 records, 13 MB, in a
 * 4 s attack: the fresh-clone CI of c04c6a1), past the 8 MiB those bounds leave for them.
 */
const NEIGHBOUR_PAUSE_MS = 2;

export const NEIGHBOUR_CODE = `export default (req, res) => { res.send('neighbour ok'); };`;

/** What the gateway under attack offers the yardstick: its URL and how to create a function. */
export interface Target {
  url: string;
  pid: number;
  createFunction(name: string, code: string, extra?: Record<string, unknown>): Promise<{ function_id: string }>;
}

export interface CallStats {
  calls: number;
  ok: number;
  /** Statuses and errors of the calls that failed, counted. */
  failures: Record<string, number>;
  p50Ms: number;
  p95Ms: number;
  /** During probing: the control's p95 over the same window (see above). */
  controlP95Ms?: number;
}

/** One call's outcome: its status (or the error's code) and the time it took. */
export type CallResult = { status: number | string; ms: number };

/** One call from the neighbour's address; resolves with the status (or the error's code) and the time taken. */
export function callFrom(url: string, localAddress: string, agent: Agent, timeoutMs = 10_000): Promise<CallResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(url, { agent, localAddress, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - started }));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ status: err.code ?? err.message, ms: performance.now() - started }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: err.code ?? err.message, ms: performance.now() - started }));
    req.end();
  });
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function summarize(results: CallResult[]): CallStats {
  const failures: Record<string, number> = {};
  const times: number[] = [];
  let ok = 0;
  for (const r of results) {
    times.push(r.ms);
    if (r.status === 200) ok++;
    else failures[String(r.status)] = (failures[String(r.status)] ?? 0) + 1;
  }
  times.sort((a, b) => a - b);
  return { calls: results.length, ok, failures, p50Ms: percentile(times, 50), p95Ms: percentile(times, 95) };
}

/** A bare node:http server in a process of its own: what any call from this client costs right now. */
class Control {
  readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  readonly child: ChildProcess;
  readonly url: string;

  private constructor(child: ChildProcess, url: string) {
    this.child = child;
    this.url = url;
  }

  static async start(): Promise<Control> {
    const child = spawn(process.execPath, ['-e', `require('node:http').createServer((q, r) => r.end('control ok')).listen(0, '127.0.0.1', function () { console.log(this.address().port); })`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const killOnExit = () => child.kill('SIGKILL');
    process.once('exit', killOnExit);
    child.once('exit', () => process.removeListener('exit', killOnExit));
    const lines = createInterface({ input: child.stdout! });
    const [line] = (await Promise.race([once(lines, 'line'), once(child, 'exit').then(() => { throw new Error('the control server exited before listening'); })])) as [string];
    lines.close();
    child.stdout!.destroy();
    child.unref();
    return new Control(child, `http://127.0.0.1:${Number(line)}/`);
  }

  call(): Promise<CallResult> {
    return callFrom(this.url, NEIGHBOUR_ADDRESS, this.agent);
  }

  close(): void {
    this.agent.destroy();
    this.child.kill('SIGKILL');
  }
}

export class Neighbour {
  readonly agent = new Agent({ keepAlive: true, maxSockets: 4 });
  quiet: CallStats | undefined;
  /** The neighbour's p95 again after the attack, measured when the one during it was over the bound. */
  quietAfter: CallStats | undefined;
  /** The p95s during attacks over the bound of the quiet p95 before them, judged again in expectRecovered. */
  private overBound: Array<{ during: CallStats; what: string; floorMs: number }> = [];
  private running: Promise<CallResult[]> | undefined;
  private controlRunning: Promise<CallResult[]> | undefined;
  private stopRequested = false;

  readonly target: Target;
  readonly functionId: string;
  private readonly control: Control;

  private constructor(target: Target, functionId: string, control: Control) {
    this.target = target;
    this.functionId = functionId;
    this.control = control;
  }

  /** Creates the neighbour function on the target and measures its quiet latency (`calls` calls, two at a time). */
  static async start(target: Target, calls = 60): Promise<Neighbour> {
    const fn = await target.createFunction(`neighbour-${Math.random().toString(36).slice(2, 8)}`, NEIGHBOUR_CODE);
    const n = new Neighbour(target, fn.function_id, await Control.start());
    await n.call(); // the cold start is not the quiet latency
    n.quiet = await n.burst(calls);
    expect(n.quiet.ok, `the neighbour must answer while quiet: ${JSON.stringify(n.quiet)}`).to.equal(calls);
    return n;
  }

  get url(): string {
    return `${this.target.url}/invoke/${this.functionId}/`;
  }

  call(): Promise<CallResult> {
    return callFrom(this.url, NEIGHBOUR_ADDRESS, this.agent);
  }

  async burst(calls: number): Promise<CallStats> {
    const results: CallResult[] = [];
    const worker = async () => {
      while (results.length < calls) results.push(await this.call());
    };
    await Promise.all([worker(), worker()]);
    return summarize(results.slice(0, calls));
  }

  /** Calls the neighbour two at a time (each pausing NEIGHBOUR_PAUSE_MS after a call) until stop(), at least `minCalls` times; the control one at a time meanwhile. */
  startProbing(minCalls = 40): void {
    this.stopRequested = false;
    const results: CallResult[] = [];
    const worker = async () => {
      while (!this.stopRequested || results.length < minCalls) {
        results.push(await this.call());
        await new Promise((r) => setTimeout(r, NEIGHBOUR_PAUSE_MS));
      }
    };
    this.running = Promise.all([worker(), worker()]).then(() => results);
    const control: CallResult[] = [];
    this.controlRunning = (async () => {
      while (!this.stopRequested || control.length < 20) {
        control.push(await this.control.call());
        await new Promise((r) => setTimeout(r, CONTROL_PAUSE_MS));
      }
      return control;
    })();
  }

  async stopProbing(): Promise<CallStats> {
    this.stopRequested = true;
    const results = await this.running!;
    const control = summarize(await this.controlRunning!);
    this.running = undefined;
    this.controlRunning = undefined;
    expect(control.ok, `the control server must answer: ${JSON.stringify(control)}`).to.equal(control.calls);
    return { ...summarize(results), controlP95Ms: control.p95Ms };
  }

  /**
   * The rule of the suite, during the attack: the answered share now; the p95 against the
   * quiet p95 before the attack now if it is within that bound, else in expectRecovered,
   * against the larger of the quiet p95s before and after the attack.
   */
  expectServed(during: CallStats, what: string, floorMs = 25): void {
    expect(during.ok / during.calls, `${what}: the neighbour answered ${during.ok} of ${during.calls} calls during the attack (${JSON.stringify(during.failures)})`).to.be.at.least(0.95);
    if (during.p95Ms > p95Bound(this.quiet!, floorMs, during.controlP95Ms)) this.overBound.push({ during, what, floorMs });
  }

  /** The rule of the suite, after the attack: the same gateway process, every call succeeds, and the p95 rule when expectServed left it open. */
  async expectRecovered(what: string, calls = 20): Promise<void> {
    expect(isAlive(this.target.pid), `${what}: the gateway (pid ${this.target.pid}) must still run`).to.equal(true);
    const after = await this.burst(calls);
    expect(after.ok, `${what}: every call after the attack must succeed: ${JSON.stringify(after)}`).to.equal(calls);
    const open = this.overBound;
    if (open.length === 0) return;
    this.overBound = [];
    this.quietAfter = await this.burst(60);
    const quiet = this.quiet!.p95Ms >= this.quietAfter.p95Ms ? this.quiet! : this.quietAfter;
    for (const o of open) {
      expect(o.during.p95Ms, `${o.what}: the neighbour's p95 during the attack (${o.during.p95Ms.toFixed(1)} ms) must be at most 5x its quiet p95 (before the attack ${this.quiet!.p95Ms.toFixed(1)} ms, after it ${this.quietAfter.p95Ms.toFixed(1)} ms; floor ${o.floorMs} ms) plus the control's p95 meanwhile (${(o.during.controlP95Ms ?? 0).toFixed(1)} ms)`).to.be.at.most(p95Bound(quiet, o.floorMs, o.during.controlP95Ms));
    }
  }

  close(): void {
    this.agent.destroy();
    this.control.close();
  }
}

/**
 * The most the neighbour's p95 may be during an attack: 5x the quiet p95 (with a floor), plus the
 * control's p95 meanwhile, which counts for at most as much again: an attack that slowed the whole
 * machine (busy processes outside their function's CPU share) would slow the control too, and must
 * still fail the rule.
 */
export function p95Bound(quiet: CallStats, floorMs: number, controlP95Ms = 0): number {
  const own = 5 * Math.max(quiet.p95Ms, floorMs);
  return own + Math.min(controlP95Ms, own);
}

/** Bytes under a folder (files only), for "the data folder grows by no more than the quota". */
export async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await folderBytes(path);
    else if (entry.isFile()) total += (await stat(path).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

/** The number of descriptors a process has open (as root, or for our own processes). */
export async function openDescriptors(pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length;
}
