import { homedir } from 'node:os';
import { CliError, EXIT_AUTH } from '../errors.ts';
import { kubeconfigPaths, readKubeconfigFiles } from './kubeconfig.ts';

// The current kube context's credential, for a gateway that takes Kubernetes
// tokens (docs/cli.md "Kubernetes credentials"). @kubernetes/client-node's
// KubeConfig reads the kubeconfig files (KUBECONFIG's list merged as kubectl
// merges it, else ~/.kube/config) and produces the Authorization header the
// way kubectl would: a static `token`, a `tokenFile`, or an exec credential
// plugin (client.authentication.k8s.io ExecCredential: cloud CLIs, OIDC
// helpers), whose answer it caches until its expiry. Only a bearer token can
// be passed on: a context that authenticates with a client certificate or a
// password is refused with what to do instead. client-node costs ~0.4 s to
// import, so it is loaded only on this path (a login made with --kube).

/** The kube context cannot give a bearer token: no context, a certificate, a failing plugin. */
export class KubeCredentialError extends CliError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, { ...options, exitCode: EXIT_AUTH });
  }
}

export interface KubeCredential {
  token: string;
  /** `the kube context "dev" (~/.kube/config)`, for messages; never the token. */
  source: string;
}

/** The bearer token of an `Authorization` header, or undefined for any other scheme. */
export function bearerOf(header: unknown): string | undefined {
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)$/i.exec(header.trim());
  return match?.[1];
}

export async function kubeCredential(env: Record<string, string | undefined>, cwd: string, home = homedir()): Promise<KubeCredential> {
  const paths = kubeconfigPaths(env, home, cwd);
  const files = (await readKubeconfigFiles(paths)).filter((f) => f.text !== undefined);
  if (files.length === 0) {
    throw new KubeCredentialError(`no kubeconfig to take a Kubernetes token from (looked at ${paths.join(', ')})`, { hint: 'set KUBECONFIG or run kubectl config use-context; or log in with the admin token instead (fnhost login without --kube)' });
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  try {
    kc.loadFromString(files[0]!.text!);
    for (const file of files.slice(1)) {
      const more = new KubeConfig();
      more.loadFromString(file.text!);
      // As kubectl: the first file that sets current-context wins.
      kc.mergeConfig(more, Boolean(kc.getCurrentContext()));
    }
  } catch (cause) {
    throw new KubeCredentialError(`the kubeconfig ${files.map((f) => f.path).join(', ')} cannot be read: ${(cause as Error).message}`, { cause });
  }
  const context = kc.getCurrentContext();
  const user = kc.getCurrentUser();
  const where = `the kube context "${context}" (${files.map((f) => f.path).join(', ')})`;
  if (!context || user === null) throw new KubeCredentialError(`the kubeconfig has no current context with a user (${files.map((f) => f.path).join(', ')})`, { hint: 'run kubectl config use-context <name>' });
  const options: { headers?: Record<string, unknown> } = {};
  try {
    await kc.applyToHTTPSOptions(options as never);
  } catch (cause) {
    throw new KubeCredentialError(`${where} gave no credential: ${(cause as Error).message}`, { cause, hint: `check that kubectl works with it (kubectl auth whoami)` });
  }
  const token = bearerOf(options.headers?.Authorization ?? options.headers?.authorization);
  if (token === undefined) {
    throw new KubeCredentialError(`${where} has no bearer token (user "${user.name}" authenticates with ${user.certFile || user.certData ? 'a client certificate' : user.username ? 'a user name and password' : 'nothing the gateway can check'})`, {
      hint: 'the gateway checks Kubernetes tokens with a TokenReview: use a context with a token or an exec plugin (kubectl create token <serviceaccount> gives one), or the admin token',
    });
  }
  return { token, source: where };
}
