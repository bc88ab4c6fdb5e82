import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FunctionRefusedError, type Executor, type Stores } from '@fnhost/core';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { EndpointIndex } from '../../../gateway/src/cluster/endpoints.ts';
import { ClusterExecutor, FunctionUnavailableError } from '../../../gateway/src/cluster/executor.ts';
import { FunctionCache } from '../../../gateway/src/cluster/functions.ts';
import { MAY_RUN_REASONS, UNRUNNABLE_REASONS, cannotRunReason, derivedFunctionId, recordFromResource } from '../../../gateway/src/cluster/resource.ts';
import { FunctionService } from '../../../gateway/src/functions/service.ts';
import { FakeClock, MemoryLogger } from './fakes.ts';

// Fail fast (issue 28): every Ready=False reason by which the operator says a
// Function will not run answers its calls at once with a 503 naming it.

const OPERATOR_SRC = join(import.meta.dirname, '../../../operator/src');
const CORE_SRC = join(import.meta.dirname, '../../../core/src');

/** Every Ready reason the operator's reconcile can write, read from its sources (the literals on lines that set a reason). */
function operatorReadyReasons(): Set<string> {
  const found = new Set<string>();
  // The operator's own files, and the pure rule of functionId homes in core that it applies.
  const files = [...['reconciler.ts', 'validate.ts', 'namespaces.ts', 'identities.ts', 'load-failure.ts', 'code-ref.ts'].map((f) => join(OPERATOR_SRC, f)), join(CORE_SRC, 'function-id-home.ts')].map((f) => readFileSync(f, 'utf8'));
  for (const text of files) {
    for (const line of text.split('\n')) {
      if (!/\breason\b|_NOT_ALLOWED =/.test(line)) continue;
      // An Event's reason (events.record) is no Ready reason.
      if (line.includes('events.record(')) continue;
      for (const m of line.matchAll(/'([A-Z][A-Za-z]+)'/g)) found.add(m[1]!);
    }
  }
  // Condition statuses and types, and a container's waiting reason the operator reads, are none of its reasons.
  for (const word of ['True', 'False', 'Unknown', 'Ready', 'Scheduled', 'CrashLoopBackOff']) found.delete(word);
  return found;
}

describe('cluster mode: fail fast for a Function that will not run', () => {
  it('every Ready reason the operator writes is classified: unrunnable (503 at once) or one a held call may outlast', () => {
    const reasons = operatorReadyReasons();
    // The scan finds what it must (it would silently find nothing if the sources moved).
    expect(readdirSync(OPERATOR_SRC)).to.include('reconciler.ts');
    for (const known of ['NamespaceNotAllowed', 'FunctionIdTaken', 'FunctionIdHomeMismatch', 'FunctionIdUnknown', 'InvalidThrowaway', 'CodeDoesNotParse', 'Available', 'Rejected', 'Forbidden']) expect(reasons).to.include(known);
    const unclassified = [...reasons].filter((r) => !UNRUNNABLE_REASONS.has(r) && !MAY_RUN_REASONS.has(r));
    expect(unclassified, 'reasons the gateway does not classify').to.deep.equal([]);
    const both = [...UNRUNNABLE_REASONS].filter((r) => MAY_RUN_REASONS.has(r));
    expect(both).to.deep.equal([]);
  });

  const resource = (reason: string, generation = 3, observedGeneration = 3): FunctionResource => ({
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: 'hello', namespace: 'kube-system', generation },
    spec: { code: 'export default (req, res) => res.send(1)' },
    status: { conditions: [{ type: 'Ready', status: 'False', reason, message: 'm', observedGeneration, lastTransitionTime: '2026-11-28T10:00:00Z' }] },
  });

  it('names each unrunnable reason; says nothing for a reason that may clear or a condition about an older spec', () => {
    for (const reason of ['NamespaceNotAllowed', 'InvalidThrowaway', 'FunctionIdTaken', 'CodeDoesNotParse', 'Rejected', 'InvalidScaling']) {
      expect(cannotRunReason(resource(reason)), reason).to.equal(`function hello (namespace kube-system) cannot run: ${reason} (kubectl describe function hello -n kube-system)`);
    }
    for (const reason of MAY_RUN_REASONS) expect(cannotRunReason(resource(reason)), reason).to.equal(undefined);
    expect(cannotRunReason(resource('NamespaceNotAllowed', 4, 3)), 'the operator has not seen the new spec').to.equal(undefined);
  });

  it('a call of a Function in a namespace not allowed is refused at once (503 naming the reason), nothing held or woken', async () => {
    const res = resource('NamespaceNotAllowed');
    const fn = recordFromResource(res)!;
    const woken: string[] = [];
    const ex = new ClusterExecutor({ endpoints: new EndpointIndex(), clock: new FakeClock(), wake: (f) => woken.push(f.name), cannotRun: () => cannotRunReason(res) });
    const err = await ex.acquire(fn).then(() => null, (e: unknown) => e);
    expect(err).to.be.instanceOf(FunctionUnavailableError);
    expect((err as FunctionUnavailableError).status).to.equal(503);
    expect((err as Error).message).to.contain('cannot run: NamespaceNotAllowed');
    expect(ex.held).to.equal(0);
    expect(woken).to.deep.equal([]);
  });

  it('a FunctionIdTaken claimant called by name says why (409 function_refused) without naming the owner', () => {
    const cache = new FunctionCache();
    const id = derivedFunctionId('team-a', 'hello-a');
    const owner: FunctionResource = { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'hello-a', namespace: 'team-a', uid: 'u1', resourceVersion: '10', creationTimestamp: '2026-11-20T10:00:00Z' }, spec: { code: 'a' } };
    const claimant: FunctionResource = { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'grab', namespace: 'team-b', uid: 'u2', resourceVersion: '11', creationTimestamp: '2026-11-25T10:00:00Z' }, spec: { code: 'b', functionId: id } };
    cache.put(owner);
    cache.put(claimant);
    const service = new FunctionService({
      stores: {} as Stores,
      executor: {} as Executor,
      scheduler: { set: () => undefined, remove: () => undefined } as never,
      pendingCount: () => 0,
      executionUrl: () => 'http://gw',
      maxTimeoutSeconds: 900,
      now: () => 0,
      logger: new MemoryLogger() as never,
      index: cache,
      defaultNamespace: 'default',
      multiNamespace: true,
    });
    const err = (() => {
      try {
        service.resolve('grab', 'team-b');
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).to.be.instanceOf(FunctionRefusedError);
    expect((err as FunctionRefusedError).status).to.equal(409);
    expect((err as FunctionRefusedError).code).to.equal('function_refused');
    expect((err as Error).message).to.contain('function grab (namespace team-b) is refused: FunctionIdTaken');
    expect((err as Error).message).not.to.contain('team-a');
    expect((err as Error).message).not.to.contain('hello-a');
    // The owner resolves as ever; a name that does not exist is still not found.
    expect(service.resolve('hello-a', 'team-a').name).to.equal('hello-a');
    expect(() => service.resolve('nothing', 'team-b')).to.throw(/not found/);
  });
});
