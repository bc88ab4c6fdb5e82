// Loaded into a gateway process by bench/gateway-allocations.ts (`node --import <this file>`):
// the first SIGUSR2 starts counting, the second stops and writes to FNHOST_BENCH_ALLOC_OUT
//   <out>.gc.json           V8's GCProfiler statistics (every GC in the window: kind, cost, heap before and after)
//   <out>.heapprofile       V8's sampling heap profile of the window, objects collected by a
//                           scavenge or a full GC included: where the allocations were made
// A bench-only preload: the gateway itself knows nothing of it.

import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { GCProfiler } from 'node:v8';

const out = process.env.FNHOST_BENCH_ALLOC_OUT;
if (out === undefined) throw new Error('allocation-probe: FNHOST_BENCH_ALLOC_OUT is not set');

const profiler = new GCProfiler();
const session = new Session();
session.connect();
let counting = false;

process.on('SIGUSR2', () => {
  if (!counting) {
    counting = true;
    profiler.start();
    // One sample per 4 KiB allocated on average: a few per request, cheap enough not to change them.
    session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    return;
  }
  counting = false;
  const gc = profiler.stop();
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (err !== null) {
      writeFileSync(`${out}.error`, String(err));
      return;
    }
    writeFileSync(`${out}.heapprofile`, JSON.stringify(result.profile));
    // Written last: its presence says both files are complete.
    writeFileSync(`${out}.gc.json`, JSON.stringify(gc));
  });
});
