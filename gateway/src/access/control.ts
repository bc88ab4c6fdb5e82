import type { Context } from 'koa';
import { FnhostError } from '@fnhost/core';
import { describeAttributes, type AccessAttributes } from './attributes.ts';
import { callerOf, ForbiddenError } from './caller.ts';
import type { KubeAccess } from './kube-access.ts';

// The one check every management route makes before it acts: first the
// namespace rule (cluster mode: namespaces where functions may live, for
// every caller, the admin token included), then, for a Kubernetes identity,
// RBAC through a SubjectAccessReview. The admin token and the panel session
// pass RBAC (they are the platform's bootstrap credential).

/** A call for a namespace where functions may not live (core/function-namespaces.ts). */
export class NamespaceNotAllowedError extends FnhostError {
  constructor(reason: string) {
    super('namespace_not_allowed', 403, reason);
  }
}

/** The namespace rule as the gateway applies it: throws NamespaceNotAllowedError naming the namespace and the setting. */
export interface NamespaceGate {
  check(namespace: string): Promise<void>;
  allows(namespace: string): Promise<boolean>;
}

export interface AccessControlOptions {
  /** Cluster mode with Kubernetes tokens accepted. */
  kube?: KubeAccess;
  /** Cluster mode: the namespaces where functions may live. */
  gate?: NamespaceGate;
}

export class AccessControl {
  readonly #kube: KubeAccess | undefined;
  readonly #gate: NamespaceGate | undefined;

  constructor(options: AccessControlOptions = {}) {
    this.#kube = options.kube;
    this.#gate = options.gate;
  }

  /** Whether Kubernetes tokens are accepted (the 401's Fnhost-Token-Kinds says so). */
  get acceptsKubeTokens(): boolean {
    return this.#kube !== undefined;
  }

  /** Throws NamespaceNotAllowedError or ForbiddenError; returns when the caller may do it. */
  async check(ctx: Pick<Context, 'state'>, attributes: AccessAttributes): Promise<void> {
    const caller = callerOf(ctx);
    if (attributes.resource === 'functions' && attributes.namespace !== '') await this.#gate?.check(attributes.namespace);
    if (caller.kind === 'admin') return;
    if (this.#kube === undefined) throw new ForbiddenError('Kubernetes identities are not accepted by this gateway');
    if (!(await this.#kube.allowed(caller.user, attributes))) {
      throw new ForbiddenError(`user "${caller.user.username}" may not ${describeAttributes(attributes)} (Kubernetes RBAC; the chart's ClusterRoles fnhost-view, fnhost-edit and fnhost-admin fold into view, edit and admin)`);
    }
  }

  /** Whether functions of `namespace` may be shown (listings across namespaces leave the others out). */
  async namespaceAllowed(namespace: string): Promise<boolean> {
    return this.#gate === undefined ? true : this.#gate.allows(namespace);
  }
}
