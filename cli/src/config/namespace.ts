import { UsageError } from '../errors.ts';
import { currentKubeContext, loadYamlParser, type KubeconfigFile, type YamlParser } from './kubeconfig.ts';

// Which namespace a command's functions are in (cluster mode). The first of:
//   1. --namespace (-n)
//   2. FNHOST_NAMESPACE
//   3. the namespace saved by `fnhost login --namespace`, for the login's server only
//   4. the namespace of the current kube context (KUBECONFIG, else ~/.kube/config),
//      only when the gateway says it runs in cluster mode
//   5. none: no ?namespace= is sent and the gateway uses its default
//      (`default` unless FNHOST_DEFAULT_NAMESPACE says otherwise)
// Later steps are read only when earlier ones give nothing: the kubeconfig
// files are looked for only then, the gateway is asked its mode only when one
// exists, and the YAML parser is loaded only in cluster mode. So
// a broken kubeconfig matters only where it would be used, and a one-machine
// gateway behaves as before namespaces (it has one, `default`).

export type GatewayMode = 'local' | 'cluster';

export type NamespaceSource =
  | { kind: 'flag' }
  | { kind: 'env' }
  | { kind: 'login'; file: string }
  | { kind: 'kube-context'; context: string; file: string }
  /** No namespace sent. `mode` when the gateway was asked; `context` when the current kube context sets none. */
  | { kind: 'gateway-default'; mode?: GatewayMode; context?: string };

export interface ResolvedNamespace {
  /** undefined: send no `?namespace=`; the gateway uses its default. */
  namespace: string | undefined;
  source: NamespaceSource;
}

export interface NamespaceInputs {
  flag?: string;
  env: Record<string, string | undefined>;
  /** The saved login when it applies to this server (the token came from it). */
  login?: { file: string; namespace?: string };
  /** The kubeconfig files that exist (KUBECONFIG or ~/.kube/config), with their text; without it the kube context is not consulted. */
  kubeconfig?: () => Promise<KubeconfigFile[]>;
  /** The gateway's mode (GET /api/v1/info); without it the kube context is not consulted. */
  gatewayMode?: () => Promise<GatewayMode>;
  /** The YAML parser for kubeconfig files; by default js-yaml, imported when first needed. */
  yamlParser?: () => Promise<YamlParser>;
}

/** A Kubernetes namespace name: a DNS-1123 label of at most 63 characters. */
export function validateNamespace(raw: string, source: string): string {
  if (raw.length > 63 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(raw)) {
    throw new UsageError(`${source} "${raw.slice(0, 80)}" is not a namespace name: lowercase letters, digits and "-", at most 63 characters`);
  }
  return raw;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

export async function resolveNamespace(inputs: NamespaceInputs): Promise<ResolvedNamespace> {
  const flag = nonEmpty(inputs.flag);
  if (flag !== undefined) return { namespace: validateNamespace(flag, '--namespace'), source: { kind: 'flag' } };
  const env = nonEmpty(inputs.env.FNHOST_NAMESPACE);
  if (env !== undefined) return { namespace: validateNamespace(env, 'FNHOST_NAMESPACE'), source: { kind: 'env' } };
  const saved = inputs.login === undefined ? undefined : nonEmpty(inputs.login.namespace);
  if (saved !== undefined) {
    return { namespace: validateNamespace(saved, `the namespace in ${inputs.login!.file}`), source: { kind: 'login', file: inputs.login!.file } };
  }
  if (inputs.kubeconfig === undefined || inputs.gatewayMode === undefined) return { namespace: undefined, source: { kind: 'gateway-default' } };
  const files = await inputs.kubeconfig();
  if (files.length === 0) return { namespace: undefined, source: { kind: 'gateway-default' } };
  const mode = await inputs.gatewayMode();
  if (mode !== 'cluster') return { namespace: undefined, source: { kind: 'gateway-default', mode } };
  const kube = currentKubeContext(files, await (inputs.yamlParser ?? loadYamlParser)());
  if (kube === undefined) return { namespace: undefined, source: { kind: 'gateway-default', mode } };
  if (kube.namespace === undefined) return { namespace: undefined, source: { kind: 'gateway-default', mode, context: kube.context } };
  return {
    namespace: validateNamespace(kube.namespace, `the namespace of kube context "${kube.context}" in ${kube.file}`),
    source: { kind: 'kube-context', context: kube.context, file: kube.file },
  };
}

/** Where the namespace came from, for people: `the kube context "dev" (/home/ada/.kube/config)`. */
export function describeNamespaceSource(source: NamespaceSource): string {
  switch (source.kind) {
    case 'flag':
      return '--namespace';
    case 'env':
      return 'FNHOST_NAMESPACE';
    case 'login':
      return `the saved login (${source.file})`;
    case 'kube-context':
      return `the kube context "${source.context}" (${source.file})`;
    case 'gateway-default':
      return source.context === undefined ? "the gateway's default" : `the gateway's default (the kube context "${source.context}" sets no namespace)`;
  }
}
