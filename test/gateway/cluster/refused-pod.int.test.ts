import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ExecutionLog } from '@fnhost/core';
import { API_VERSION, KIND } from '@fnhost/core/function-resource.ts';
import { EndpointIndex, type EndpointSlice } from '../../../gateway/src/cluster/endpoints.ts';
import { ClusterExecutor } from '../../../gateway/src/cluster/executor.ts';
import { httpHealthProbe } from '../../../gateway/src/cluster/probe.ts';
import { recordFromResource } from '../../../gateway/src/cluster/resource.ts';
import { Invoker } from '../../../gateway/src/invoke/proxy.ts';
import { silentLogger } from '../../../gateway/src/log.ts';
import { Metrics } from '../../../gateway/src/metrics.ts';
import { systemClock } from '../../../gateway/src/scheduler/local.ts';

// The race a deactivate-then-activate (or any scale down or rollout) opens in
// cluster mode, over real HTTP: the old pod's runtime has closed its port while
// its EndpointSlice still lists it as ready, and the new pod is starting. The
// call must be sent again to the new pod, not answered 502 (a fresh-clone CI
// run once got `runtime_unavailable (ECONNREFUSED)` there, in the panel test).

type Ep = NonNullable<EndpointSlice['endpoints']>[number];

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

describe('cluster mode: a call to a pod that stopped listening while its slice says ready (real HTTP)', function () {
  this.timeout(30_000);
  const fn = recordFromResource({ apiVersion: API_VERSION, kind: KIND, metadata: { name: 'toggle', namespace: 'ns' }, spec: { code: 'x', timeoutSeconds: 10 } })!;
  let newPod: Server;
  let front: Server;
  let invoker: Invoker;
  let executor: ClusterExecutor;
  let index: EndpointIndex;
  let url: string;
  let stoppedPort: number;
  let newPort: number;
  const records: ExecutionLog[] = [];
  const served: string[] = [];

  before(async () => {
    // The stopped pod: a port that was listening and is closed now (ECONNREFUSED).
    const old = createServer();
    stoppedPort = await listen(old);
    await new Promise<void>((resolve) => old.close(() => resolve()));
    newPod = createServer((req, res) => {
      if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
        return;
      }
      served.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"on":true}');
    });
    newPort = await listen(newPod);
    index = new EndpointIndex();
    executor = new ClusterExecutor({ endpoints: index, clock: systemClock, wake: () => undefined, probe: httpHealthProbe, holdMs: 10_000 });
    invoker = new Invoker({
      functions: { byId: (id) => (id === fn.function_id ? fn : undefined) },
      executor,
      recorder: { record: (log) => void records.push(log) },
      metrics: new Metrics(),
      logger: silentLogger,
      trustProxy: false,
    });
    front = createServer((req, res) => invoker.handleHttp(req, res));
    url = `http://127.0.0.1:${await listen(front)}/invoke/${fn.function_id}`;
  });
  after(async () => {
    await invoker?.close();
    await executor?.close();
    front?.close();
    newPod?.close();
  });

  function sliceOf(endpoints: Ep[], port: number): EndpointSlice {
    return { metadata: { name: 'fn-toggle-abc', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'fn-toggle' } }, addressType: 'IPv4', ports: [{ name: 'http', port }], endpoints };
  }

  it('sends the call to the new pod (found by the probe) and answers 200, passing the stopped pod over', async () => {
    // One slice port for both pods: the two fake pods share 127.0.0.x addresses on different ports,
    // so each is its own slice here (a real Service's pods share the port and differ by address).
    index.apply({ key: 'ns/old', object: { ...sliceOf([{ addresses: ['127.0.0.1'], conditions: { ready: true } }], stoppedPort), metadata: { name: 'old', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'fn-toggle' } } } });
    index.apply({ key: 'ns/new', object: { ...sliceOf([{ addresses: ['127.0.0.1'], conditions: { ready: false } }], newPort), metadata: { name: 'new', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'fn-toggle' } } } });
    const res = await fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    const text = await res.text();
    expect(res.status, text).to.equal(200);
    expect(JSON.parse(text)).to.deep.equal({ on: true });
    expect(served).to.deep.equal(['POST /']);
    expect(executor.refusals).to.equal(1);
    expect(executor.releasedByProbe).to.equal(1);
    // The next call does not try the stopped pod again (still listed ready, within the TTL).
    const again = await fetch(url);
    expect(again.status).to.equal(200);
    expect(executor.refusals).to.equal(1);
    expect(records.map((r) => r.status_code)).to.deep.equal([200, 200]);
  });
});
