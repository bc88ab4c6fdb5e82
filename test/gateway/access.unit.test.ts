import { expect } from 'chai';
import { parseFunctionNamespaces } from '@fnhost/core/function-namespaces.ts';
import { describeAttributes } from '../../gateway/src/access/attributes.ts';
import { apiAuth, TOKEN_KINDS_HEADER } from '../../gateway/src/access/authenticate.ts';
import { ADMIN_CALLER, type Caller } from '../../gateway/src/access/caller.ts';
import { AccessControl, NamespaceNotAllowedError } from '../../gateway/src/access/control.ts';
import { ACCESS_REVIEW_PATH, AccessReviewUnavailableError, KubeAccess, TOKEN_REVIEW_PATH, accessReview } from '../../gateway/src/access/kube-access.ts';
import { digest } from '../../gateway/src/auth.ts';
import { KubeNamespaceGate } from '../../gateway/src/cluster/namespace-gate.ts';

const VIEWER = { username: 'system:serviceaccount:team-a:viewer', uid: 'u-1', groups: ['system:serviceaccounts', 'system:authenticated'] };

/** A stand-in API server: tokens it knows, and what each user may do (`verb resource[/sub] namespace`). */
function fakeApiServer(grants: Record<string, string[]>) {
  const sent: Array<{ path: string; body: any }> = [];
  let failing = false;
  const send = async (path: string, body: any) => {
    sent.push({ path, body });
    if (failing) throw new Error('connect ECONNREFUSED');
    if (path === TOKEN_REVIEW_PATH) {
      return body.spec.token === 'kube-viewer-token' ? { status: { authenticated: true, user: VIEWER } } : { status: { authenticated: false, error: 'invalid bearer token' } };
    }
    const a = body.spec.resourceAttributes;
    const what = `${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''} ${a.namespace}`;
    return { status: { allowed: (grants[body.spec.user] ?? []).includes(what) } };
  };
  return { send, sent, fail: (on: boolean) => (failing = on) };
}

describe('gateway access: Kubernetes tokens and RBAC', () => {
  it('builds the SubjectAccessReview of a call with the whole identity and the fnhost.dev attributes', () => {
    expect(accessReview(VIEWER, { verb: 'get', resource: 'functions', subresource: 'logs', namespace: 'team-a', name: 'hello' })).to.deep.equal({
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: VIEWER.username,
        uid: 'u-1',
        groups: VIEWER.groups,
        resourceAttributes: { group: 'fnhost.dev', resource: 'functions', subresource: 'logs', verb: 'get', namespace: 'team-a', name: 'hello' },
      },
    });
    expect(describeAttributes({ verb: 'list', resource: 'functions', namespace: '' })).to.equal('list functions.fnhost.dev across all namespaces');
    expect(describeAttributes({ verb: 'create', resource: 'functions', subresource: 'test', namespace: 'a', name: 'x' })).to.equal('create functions/test.fnhost.dev "x" in namespace "a"');
  });

  it('caches reviews for the TTL, bounded, keyed by the token digest; failures are not cached', async () => {
    let now = 1_000; // lru-cache reads a start time of 0 as "no TTL"
    const api = fakeApiServer({ [VIEWER.username]: ['get functions team-a'] });
    const access = new KubeAccess({ send: api.send, ttlMs: 10_000, maxEntries: 2, now: () => now });
    expect(await access.authenticate('kube-viewer-token')).to.deep.equal(VIEWER);
    expect(await access.authenticate('kube-viewer-token')).to.deep.equal(VIEWER);
    expect(await access.authenticate('stolen')).to.equal(undefined);
    expect(access.tokenReviews).to.equal(2);
    const attrs = { verb: 'get', resource: 'functions', namespace: 'team-a' } as const;
    // Concurrent questions share one review.
    expect(await Promise.all([access.allowed(VIEWER, attrs), access.allowed(VIEWER, attrs)])).to.deep.equal([true, true]);
    expect(await access.allowed(VIEWER, { ...attrs, verb: 'delete' })).to.equal(false);
    expect(access.accessReviews).to.equal(2);
    now = 11_001;
    expect(await access.allowed(VIEWER, attrs)).to.equal(true);
    expect(access.accessReviews).to.equal(3);
    api.fail(true);
    now = 31_000;
    let error: unknown;
    await access.authenticate('kube-viewer-token').catch((err) => (error = err));
    expect(error).to.be.instanceOf(AccessReviewUnavailableError);
    expect((error as Error).message).not.to.contain('kube-viewer-token');
    api.fail(false);
    expect(await access.authenticate('kube-viewer-token')).to.deep.equal(VIEWER);
    expect(api.sent.filter((s) => s.path === ACCESS_REVIEW_PATH)).to.have.length(3);
  });

  it('lets the admin through RBAC, asks the API server for a Kubernetes identity, and applies the namespace rule to both first', async () => {
    const api = fakeApiServer({ [VIEWER.username]: ['get functions team-a', 'get functions kube-system'] });
    const gate = new KubeNamespaceGate(parseFunctionNamespaces({ names: 'team-a', platformNamespace: 'fnhost-system' }), async () => ({}));
    const control = new AccessControl({ kube: new KubeAccess({ send: api.send }), gate });
    const as = (caller: Caller) => ({ state: { caller } });
    const kube: Caller = { kind: 'kube', user: VIEWER };
    await control.check(as(ADMIN_CALLER), { verb: 'delete', resource: 'functions', namespace: 'team-a' });
    await control.check(as(kube), { verb: 'get', resource: 'functions', namespace: 'team-a' });
    let error: any;
    await control.check(as(kube), { verb: 'delete', resource: 'functions', namespace: 'team-a', name: 'hello' }).catch((err) => (error = err));
    expect(error.status).to.equal(403);
    expect(error.code).to.equal('forbidden');
    expect(error.message).to.contain('user "system:serviceaccount:team-a:viewer" may not delete functions.fnhost.dev "hello" in namespace "team-a"');
    for (const caller of [ADMIN_CALLER, kube]) {
      error = undefined;
      await control.check(as(caller), { verb: 'get', resource: 'functions', namespace: 'kube-system' }).catch((err) => (error = err));
      expect(error).to.be.instanceOf(NamespaceNotAllowedError);
      expect(error.message).to.contain('namespace "kube-system" may never hold functions');
      error = undefined;
      await control.check(as(caller), { verb: 'get', resource: 'functions', namespace: 'team-b' }).catch((err) => (error = err));
      expect(error.code).to.equal('namespace_not_allowed');
      expect(error.message).to.contain('namespace "team-b" is not one where functions may live: functions.namespaces (FNHOST_FUNCTION_NAMESPACES) is [team-a]');
    }
    // A route that ran without the authentication middleware is refused, never allowed.
    error = undefined;
    await control.check({ state: {} }, { verb: 'get', resource: 'functions', namespace: 'team-a' }).catch((err) => (error = err));
    expect(error.status).to.equal(500);
  });

  it('reads a namespace\'s labels only for the selector, cached', async () => {
    let reads = 0;
    let now = 1_000; // lru-cache reads a start time of 0 as "no TTL"
    const gate = new KubeNamespaceGate(parseFunctionNamespaces({ names: 'team-a', selector: 'fnhost.dev/functions=allowed' }), async (ns): Promise<Record<string, string> | undefined> => {
      reads++;
      return ns === 'labelled' ? { 'fnhost.dev/functions': 'allowed' } : ns === 'plain' ? {} : undefined;
    }, { ttlMs: 30_000, now: () => now });
    expect(await gate.allows('team-a')).to.equal(true);
    expect(reads).to.equal(0);
    expect(await gate.allows('labelled')).to.equal(true);
    expect(await gate.allows('labelled')).to.equal(true);
    expect(await gate.allows('plain')).to.equal(false);
    expect(await gate.allows('ghost')).to.equal(false);
    expect(reads).to.equal(3);
    now = 31_001;
    await gate.allows('labelled');
    expect(reads).to.equal(4);
  });

  it('authenticates the admin token in constant time, else a Kubernetes token by TokenReview, and says which kinds it takes on 401', async () => {
    const api = fakeApiServer({});
    const withKube = apiAuth({ adminToken: { digest: digest('admin-secret'), source: 'FNHOST_TOKEN', file: '' }, kube: new KubeAccess({ send: api.send }) });
    const adminOnly = apiAuth({ adminToken: { digest: digest('admin-secret'), source: 'FNHOST_TOKEN', file: '' } });
    const call = async (mw: ReturnType<typeof apiAuth>, authorization?: string) => {
      const headers: Record<string, string> = {};
      const ctx: any = { state: {}, get: (name: string) => (name === 'authorization' ? (authorization ?? '') : ''), set: (k: string, v: string) => (headers[k] = v) };
      let passed = false;
      let error: any;
      await mw(ctx, async () => {
        passed = true;
      }).catch((err: unknown) => (error = err));
      return { passed, caller: ctx.state.caller, error, headers };
    };
    expect((await call(withKube, 'Bearer admin-secret')).caller).to.deep.equal(ADMIN_CALLER);
    expect(api.sent).to.have.length(0);
    const kube = await call(withKube, 'Bearer kube-viewer-token');
    expect(kube.caller).to.deep.equal({ kind: 'kube', user: VIEWER });
    const wrong = await call(withKube, 'Bearer nope');
    expect(wrong.passed).to.equal(false);
    expect(wrong.error.status).to.equal(401);
    expect(wrong.headers[TOKEN_KINDS_HEADER]).to.equal('admin, kubernetes');
    const none = await call(adminOnly);
    expect(none.error.status).to.equal(401);
    expect(none.headers[TOKEN_KINDS_HEADER]).to.equal('admin');
    expect((await call(adminOnly, 'Bearer kube-viewer-token')).error.message).to.equal('the token is wrong');
  });
});
