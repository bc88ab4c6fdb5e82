import type { Context, Next } from 'koa';
import { bearerToken, sameSecret, UnauthorizedError, type AdminToken } from '../auth.ts';
import { ADMIN_CALLER, setCaller } from './caller.ts';
import type { KubeAccess } from './kube-access.ts';

// The main listener's /api/v1 guard: the admin token (compared in constant
// time, as ever), or, in cluster mode, a Kubernetes bearer token the API
// server vouches for (TokenReview). Every 401 says which kinds of token the
// gateway takes in `Fnhost-Token-Kinds` (`admin` or `admin, kubernetes`), so
// the CLI can tell the user to log in with the kube context (docs/cli.md);
// the CLI never sends cluster credentials on its own because of it.

export const TOKEN_KINDS_HEADER = 'fnhost-token-kinds';

export function apiAuth(options: { adminToken: AdminToken; kube?: KubeAccess }) {
  const kinds = options.kube === undefined ? 'admin' : 'admin, kubernetes';
  return async (ctx: Context, next: Next) => {
    const presented = bearerToken(ctx.get('authorization') || undefined);
    if (presented === undefined) {
      ctx.set(TOKEN_KINDS_HEADER, kinds);
      throw new UnauthorizedError(`the management API needs Authorization: Bearer <token>${options.kube === undefined ? '' : ' (the admin token or a Kubernetes token)'}`);
    }
    if (sameSecret(presented, options.adminToken.digest)) {
      setCaller(ctx, ADMIN_CALLER);
      return next();
    }
    const user = await options.kube?.authenticate(presented);
    if (user === undefined) {
      ctx.set(TOKEN_KINDS_HEADER, kinds);
      throw new UnauthorizedError(options.kube === undefined ? 'the token is wrong' : 'the token is neither the admin token nor a Kubernetes token the API server accepts');
    }
    setCaller(ctx, { kind: 'kube', user });
    return next();
  };
}
