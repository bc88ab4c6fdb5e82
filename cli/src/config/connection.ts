import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { UsageError, LocalIoError } from '../errors.ts';
import { kubeconfigPaths, readKubeconfigFiles, type YamlParser } from './kubeconfig.ts';
import { readLogin, type SavedLogin } from './login-file.ts';
import { kubeCredential } from './kube-credentials.ts';
import { resolveNamespace, type GatewayMode, type NamespaceSource } from './namespace.ts';
import { LOCAL_DEFAULT_URL, localTokenPath, loginFilePath } from './paths.ts';

export { validateNamespace } from './namespace.ts';

// Which server and token a command uses. The URL comes from the first of:
// --url, FNHOST_URL, the saved login, the local platform's default. The token
// comes from --token, FNHOST_TOKEN, then (only for the URL it was saved or made
// for, so a token never travels to another server) the saved login's token or
// the local platform's token file ($FNHOST_DATA_DIR/token or ./.fnhost/token).
// A login saved with --kube gives, for its URL only, the current kube
// context's credential (config/kube-credentials.ts), read at each command.
// The namespace (functions on a cluster) comes from --namespace, FNHOST_NAMESPACE,
// the saved login's (for its URL only), then the current kube context's when
// the gateway runs in cluster mode; none means the gateway's default
// (config/namespace.ts has the order and the reasons).

export interface Connection {
  url: string;
  urlSource: string;
  token: string | undefined;
  tokenSource: string | undefined;
  /** Where the token came from in words, when tokenSource alone would mislead (a kube context's credential). */
  tokenDescription?: string;
  namespace?: string;
  /** Where the namespace (or its absence) came from. */
  namespaceSource: NamespaceSource;
}

export type Server = Pick<Connection, 'url' | 'urlSource' | 'token' | 'tokenSource' | 'tokenDescription'>;

export interface ConnectionInputs {
  flags: { url?: string; token?: string; namespace?: string };
  env: Record<string, string | undefined>;
  cwd: string;
  home?: string;
  /**
   * Asks the server its mode (GET /api/v1/info), only when the kube context
   * could give the namespace. Without it the kube context is never consulted.
   */
  gatewayMode?: (server: Server) => Promise<GatewayMode>;
  /** The YAML parser for kubeconfig files (tests); by default js-yaml, imported when needed. */
  yamlParser?: () => Promise<YamlParser>;
}

export function normaliseUrl(raw: string, source: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`${source} "${raw}" is not a URL; expected something like http://127.0.0.1:8080`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${source} "${raw}" must start with http:// or https://`);
  }
  return url.toString().replace(/\/+$/, '');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

async function readTokenFile(path: string): Promise<string | undefined> {
  try {
    return nonEmpty(await readFile(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new LocalIoError(`cannot read the token file ${path} (${(err as NodeJS.ErrnoException).code})`, { cause: err });
  }
}

function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '[::1]' || host.startsWith('127.');
}

export async function resolveConnection(inputs: ConnectionInputs): Promise<Connection> {
  const server = await resolveServer(inputs);
  const { env, cwd } = inputs;
  const home = inputs.home ?? homedir();
  const explicit = nonEmpty(inputs.flags.namespace) !== undefined || nonEmpty(env.FNHOST_NAMESPACE) !== undefined;
  const loginPath = loginFilePath(env, inputs.home);
  // The login's namespace goes with its server: only when the token came from it.
  const login = !explicit && server.tokenSource === loginPath ? await readLogin(loginPath) : undefined;
  const { gatewayMode } = inputs;
  const resolved = await resolveNamespace({
    flag: inputs.flags.namespace,
    env,
    login: login === undefined ? undefined : { file: loginPath, namespace: login.namespace },
    kubeconfig: () => readKubeconfigFiles(kubeconfigPaths(env, home, cwd)),
    gatewayMode: gatewayMode === undefined ? undefined : () => gatewayMode(server),
    yamlParser: inputs.yamlParser,
  });
  return { ...server, namespaceSource: resolved.source, ...(resolved.namespace === undefined ? {} : { namespace: resolved.namespace }) };
}

async function resolveServer(inputs: ConnectionInputs): Promise<Server> {
  const { flags, env } = inputs;
  const loginPath = loginFilePath(env, inputs.home);
  const flagUrl = nonEmpty(flags.url);
  const envUrl = nonEmpty(env.FNHOST_URL);
  let url: string;
  let urlSource: string;
  let login: SavedLogin | undefined;
  if (flagUrl !== undefined) {
    url = normaliseUrl(flagUrl, '--url');
    urlSource = '--url';
  } else if (envUrl !== undefined) {
    url = normaliseUrl(envUrl, 'FNHOST_URL');
    urlSource = 'FNHOST_URL';
  } else if ((login = await readLogin(loginPath)) !== undefined) {
    url = normaliseUrl(login.url, `the url in ${loginPath}`);
    urlSource = loginPath;
  } else {
    url = LOCAL_DEFAULT_URL;
    urlSource = 'the local default';
  }

  const flagToken = nonEmpty(flags.token);
  if (flagToken !== undefined) return { url, urlSource, token: flagToken, tokenSource: '--token' };
  const envToken = nonEmpty(env.FNHOST_TOKEN);
  if (envToken !== undefined) return { url, urlSource, token: envToken, tokenSource: 'FNHOST_TOKEN' };
  login ??= await readLogin(loginPath);
  if (login !== undefined && normaliseUrl(login.url, loginPath) === url) {
    if (login.kube) {
      const credential = await kubeCredential(env, inputs.cwd, inputs.home);
      return { url, urlSource, token: credential.token, tokenSource: loginPath, tokenDescription: `${credential.source}, as ${loginPath} says (fnhost login --kube)` };
    }
    return { url, urlSource, token: login.token, tokenSource: loginPath };
  }
  if (isLoopback(url)) {
    const path = localTokenPath(inputs.cwd, env);
    const token = await readTokenFile(path);
    if (token !== undefined) return { url, urlSource, token, tokenSource: path };
  }
  return { url, urlSource, token: undefined, tokenSource: undefined };
}
