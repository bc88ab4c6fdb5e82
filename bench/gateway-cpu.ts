// The gateway's CPU per request at a fixed, evenly paced rate: this checkout's gateway and a
// baseline's (another checkout's gateway/src/main.ts), the same hello function, in interleaved
// rounds (issue 31's guard against creeping per-call cost).
//
//   node bench/gateway-cpu.ts --baseline <checkout>/gateway/src/main.ts [--rate 400] [--seconds 5] [--rounds 5]
//                             [--flags "<node options of this checkout's gateway>"] [--baseline-flags "<...of the baseline's>"]
//
// With the same checkout as baseline and --flags, it weighs a Node/V8 option of the gateway's
// process (e.g. --max-semi-space-size: issue 31's GC share) against the gateway without it.
//
// Why a fixed rate and not autocannon's closed loop: under a closed loop each gateway serves
// what the machine lets it, and at a few hundred requests a second each request pays its own
// wake-ups and a larger share of the per-interval work (the log writer's batch, its progress
// tick), so on a loaded machine the CPU per request of two gateways measured at different
// rates differs by more than the change under test. At the same paced rate both pay the same
// per-interval work per request; the difference left is the per-call code. Sandbox on,
// recording every execution (both gateways' defaults).

import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startGateway } from '../test/helpers/platform.ts';
import { paced } from './lib/paced.ts';
import { cpuMicros } from './lib/proc.ts';
import { createHello, median, nodeOptionsOf } from './lib/load.ts';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    rate: { type: 'string', default: '400' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '5' },
    flags: { type: 'string', default: '' },
    'baseline-flags': { type: 'string', default: '' },
  },
});
if (values.baseline === undefined) throw new Error('--baseline <checkout>/gateway/src/main.ts is required');
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);

const load0 = loadavg();
const gateways = [
  { name: `this checkout${values.flags === '' ? '' : ` ${values.flags}`}`, gw: await startGateway({ env: { FNHOST_QUIET: '1' }, nodeArgs: nodeOptionsOf(values.flags) }) },
  { name: `baseline${values['baseline-flags'] === '' ? '' : ` ${values['baseline-flags']}`}`, gw: await startGateway({ main: values.baseline, env: { FNHOST_QUIET: '1' }, nodeArgs: nodeOptionsOf(values['baseline-flags']) }) },
];
try {
  const targets = await Promise.all(gateways.map(async ({ gw }) => {
    const url = new URL(await createHello(gw));
    return { origin: url.origin, path: url.pathname };
  }));
  for (const t of targets) await paced(t, RATE, 1); // warm-up: runtimes started, pools filled
  const cpu: number[][] = gateways.map(() => []);
  const errors = gateways.map(() => 0);
  const achieved: number[][] = gateways.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which goes first, so neither always follows the other.
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const pid = gateways[i]!.gw.pid;
      const c0 = cpuMicros([pid]);
      const r = await paced(targets[i]!, RATE, SECONDS);
      const used = cpuMicros([pid]) - c0;
      cpu[i]!.push(used / (r.sent - r.errors));
      errors[i]! += r.errors;
      achieved[i]!.push(r.achievedRate);
    }
  }
  const load1 = loadavg();
  console.log(`fnhost gateway CPU per request — ${new Date().toISOString()} — load ${load0.map((l) => l.toFixed(2)).join(' ')} → ${load1.map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`${RATE} req/s evenly paced, ${SECONDS} s a round, ${ROUNDS} interleaved rounds; baseline ${values.baseline}\n`);
  console.log('| gateway | CPU µs/req, median | per round | achieved req/s (median) | errors |');
  console.log('|---|---|---|---|---|');
  for (const [i, { name }] of gateways.entries()) {
    console.log(`| ${name} | ${median(cpu[i]!).toFixed(0)} | ${cpu[i]!.map((c) => c.toFixed(0)).join(', ')} | ${median(achieved[i]!).toFixed(0)} | ${errors[i]} |`);
  }
  const ratios = cpu[0]!.map((c, k) => c / cpu[1]![k]!);
  console.log(`\nthis / baseline CPU per request: ${median(ratios).toFixed(3)}× (median of per-round ratios: ${ratios.map((r) => r.toFixed(3)).join(', ')})`);
} finally {
  for (const { gw } of gateways) await gw.stop();
}
