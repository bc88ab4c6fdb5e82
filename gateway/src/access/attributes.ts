// What a management call asks Kubernetes' RBAC for: a verb on a resource of
// the API group fnhost.dev in a namespace, as a SubjectAccessReview's
// resourceAttributes. The resources are those of the Function CRD plus
// subresources that exist only here (the API server's authorizer checks
// names, not whether they are served), so a Role can grant them one by one:
//
//   functions                get, list, create, patch, update, delete
//   functions/logs           get     (execution records: request data a viewer of the spec may not see)
//   functions/test           create  (runs the function's code: an edit right, not a view right)
//   functions/networkpolicy  update  (a function's egress rules: containment, so in no aggregated role)
//   networkpolicies          get, update (cluster scope: the global egress rules, namespace "")
//
// docs/cluster-mode.md "Access through Kubernetes RBAC" has the table of routes.

export const API_GROUP = 'fnhost.dev';

export type Verb = 'get' | 'list' | 'create' | 'update' | 'patch' | 'delete';

export interface AccessAttributes {
  verb: Verb;
  resource: 'functions' | 'networkpolicies';
  subresource?: 'logs' | 'test' | 'networkpolicy';
  /** '' for cluster scope (every namespace, or a cluster-wide resource). */
  namespace: string;
  name?: string;
}

/** "create functions.fnhost.dev in namespace "team-a"", as kubectl words a refusal. */
export function describeAttributes(a: AccessAttributes): string {
  const resource = `${a.resource}${a.subresource === undefined ? '' : `/${a.subresource}`}`;
  const named = a.name === undefined ? '' : ` "${a.name}"`;
  const where = a.namespace === '' ? (a.resource === 'functions' ? ' across all namespaces' : ' (cluster scope)') : ` in namespace "${a.namespace}"`;
  return `${a.verb} ${resource}.${API_GROUP}${named}${where}`;
}
