import Router from '@koa/router';
import { ValidationError, limits, parsePositiveInt, type NetworkPolicy } from '@fnhost/core';
import { DEFAULT_GLOBAL_POLICY, type PolicyCache } from '../policy/cache.ts';
import type { FunctionService } from '../functions/service.ts';
import { validatePolicy } from '../policy/match.ts';
import { readJson } from './body.ts';
import type { AccessControl } from '../access/control.ts';
import { authorizedFunction } from './functions.ts';
import type { Explanation } from '../egress/decision.ts';

/** The egress proxy's dry run (EgressProxy.explain), or undefined where this gateway runs no proxy. */
export type ConnectionCheck = ((functionId: string, target: string) => Promise<Explanation & { target: string; message: string }>) | undefined;

// /api/v1/network-policy: administrator-set outbound rules, global and per function.

export function policyRoutes(deps: { policies: PolicyCache; functions: FunctionService; now: () => number; access: AccessControl; check?: () => ConnectionCheck }): Router {
  const { policies, functions, access } = deps;
  // The global rules and the listing of every function's are cluster-scope; a function's rules are a subresource of it.
  const cluster = (verb: 'get' | 'update') => ({ verb, resource: 'networkpolicies' as const, namespace: '' });
  const router = new Router({ prefix: '/api/v1/network-policy' });
  // Who made a change: the panel session's label, or the bearer token's holder.
  const actor = (ctx: { state: { actor?: string } }) => ctx.state.actor ?? 'admin';

  router.get('/', async (ctx) => {
    await access.check(ctx, cluster('get'));
    const byFunction: Record<string, NetworkPolicy> = {};
    for (const fn of functions.all()) {
      const policy = await policies.get(fn.function_id);
      if (policy !== null) byFunction[fn.function_id] = policy;
    }
    ctx.body = { global: (await policies.get('global')) ?? DEFAULT_GLOBAL_POLICY, functions: byFunction };
  });

  router.put('/global', async (ctx) => {
    await access.check(ctx, cluster('update'));
    const policy = validatePolicy(await readJson(ctx, limits.MAX_API_BODY_BYTES));
    await policies.set('global', policy, actor(ctx), deps.now());
    ctx.body = policy;
  });

  // One function's policy beside the global one: what applies to it (fnhost policy <function>).
  router.get('/functions/:ref', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'get');
    await access.check(ctx, cluster('get'));
    ctx.body = { function_id: fn.function_id, name: fn.name, namespace: fn.namespace, policy: await policies.get(fn.function_id), global: (await policies.get('global')) ?? DEFAULT_GLOBAL_POLICY };
  });

  // The dry run, as kubectl auth can-i answers for RBAC: allowed or denied, the rule, the scope and
  // the addresses the name resolves to now. Reading it reads the policies: the same right as GET.
  router.get('/functions/:ref/check', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'get');
    await access.check(ctx, cluster('get'));
    const target = ctx.query.target;
    if (typeof target !== 'string' || target === '' || target.length > 300) throw new ValidationError('policy check needs target=<host[:port]> (a name or an address; port 443 when none is given)');
    const check = deps.check?.();
    if (check === undefined) throw new ValidationError('this gateway runs no egress proxy, so it has no connection to check');
    try {
      // The explanation's own `name` (a name's decision) would overwrite the function's name: it is `name_decision` here.
      const { name: nameDecision, ...explanation } = await check(fn.function_id, target);
      ctx.body = { function_id: fn.function_id, name: fn.name, ...explanation, ...(nameDecision === undefined ? {} : { name_decision: nameDecision }) };
    } catch (err) {
      if (err instanceof Error && err.name === 'EgressRefusal') throw new ValidationError(err.message);
      throw err;
    }
  });

  router.put('/functions/:ref', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'update', 'networkpolicy');
    const policy = validatePolicy(await readJson(ctx, limits.MAX_API_BODY_BYTES));
    await policies.set(fn.function_id, policy, actor(ctx), deps.now());
    ctx.body = policy;
  });

  router.delete('/functions/:ref', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'update', 'networkpolicy');
    await policies.set(fn.function_id, null, actor(ctx), deps.now());
    ctx.status = 204;
  });

  router.get('/changes', async (ctx) => {
    await access.check(ctx, cluster('get'));
    const limit = ctx.query.limit === undefined ? 50 : parsePositiveInt(ctx.query.limit, 'limit', 1000);
    ctx.body = { changes: await policies.changes(limit) };
  });

  return router;
}
