import type { Context } from 'koa';
import { FnhostError } from '@fnhost/core';

// Who makes a management call. The admin token (and the panel session, which
// is opened with it) may do everything the namespace rule allows; a
// Kubernetes identity (a bearer token the API server vouched for in a
// TokenReview) may do what a SubjectAccessReview says, call by call
// (./kube-access.ts, docs/cluster-mode.md "Access through Kubernetes RBAC").

/** The identity a TokenReview returns, as a SubjectAccessReview takes it back. */
export interface KubeUser {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export type Caller = { kind: 'admin' } | { kind: 'kube'; user: KubeUser };

export const ADMIN_CALLER: Caller = Object.freeze({ kind: 'admin' });

/** A Kubernetes identity lacks the permission a call needs. */
export class ForbiddenError extends FnhostError {
  constructor(message: string) {
    super('forbidden', 403, message);
  }
}

/** The caller the authentication middleware put on the request; none is a wiring bug, refused rather than allowed. */
export function callerOf(ctx: Pick<Context, 'state'>): Caller {
  const caller = (ctx.state as { caller?: Caller }).caller;
  if (caller === undefined) throw new FnhostError('internal', 500, 'a management route ran without an authenticated caller', { expose: false });
  return caller;
}

export function setCaller(ctx: Pick<Context, 'state'>, caller: Caller): void {
  (ctx.state as { caller?: Caller }).caller = caller;
}
