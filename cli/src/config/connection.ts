import { readFile } from 'node:fs/promises';
import { UsageError, LocalIoError } from '../errors.ts';
import { readLogin, type SavedLogin } from './login-file.ts';
import { LOCAL_DEFAULT_URL, localTokenPath, loginFilePath } from './paths.ts';

// Which server and token a command uses. The URL comes from the first of:
// --url, FNHOST_URL, the saved login, the local platform's default. The token
// comes from --token, FNHOST_TOKEN, then (only for the URL it was saved or made
// for, so a token never travels to another server) the saved login's token or
// the local platform's token file ($FNHOST_DATA_DIR/token or ./.fnhost/token).
// The namespace (functions on a cluster) comes from --namespace, FNHOST_NAMESPACE,
// then the saved login's (for its URL only); none means the server's default.

export interface Connection {
  url: string;
  urlSource: string;
  token: string | undefined;
  tokenSource: string | undefined;
  namespace?: string;
}

export interface ConnectionInputs {
  flags: { url?: string; token?: string; namespace?: string };
  env: Record<string, string | undefined>;
  cwd: string;
  home?: string;
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
  const connection = await resolveServer(inputs);
  const flagNs = nonEmpty(inputs.flags.namespace);
  const envNs = nonEmpty(inputs.env.FNHOST_NAMESPACE);
  if (flagNs !== undefined) return { ...connection, namespace: validateNamespace(flagNs, '--namespace') };
  if (envNs !== undefined) return { ...connection, namespace: validateNamespace(envNs, 'FNHOST_NAMESPACE') };
  const loginPath = loginFilePath(inputs.env, inputs.home);
  const login = connection.tokenSource === loginPath ? await readLogin(loginPath) : undefined;
  if (login?.namespace !== undefined) return { ...connection, namespace: validateNamespace(login.namespace, `the namespace in ${loginPath}`) };
  return connection;
}

async function resolveServer(inputs: ConnectionInputs): Promise<Connection> {
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
    return { url, urlSource, token: login.token, tokenSource: loginPath };
  }
  if (isLoopback(url)) {
    const path = localTokenPath(inputs.cwd, env);
    const token = await readTokenFile(path);
    if (token !== undefined) return { url, urlSource, token, tokenSource: path };
  }
  return { url, urlSource, token: undefined, tokenSource: undefined };
}
