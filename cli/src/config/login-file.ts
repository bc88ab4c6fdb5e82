import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { LocalIoError } from '../errors.ts';

// The saved login: one server URL and its token (or, for `fnhost login
// --kube`, the mark that each command presents the current kube context's
// credential to it instead: the file then holds no secret), readable by the
// user only.

export type SavedLogin = {
  url: string;
  /** Default namespace of the functions on a cluster (`fnhost login --namespace`). */
  namespace?: string;
} & ({ token: string; kube?: undefined } | { kube: true; token?: undefined });

/** The saved login, or undefined when there is none; a damaged file is an error that names it. */
export async function readLogin(path: string): Promise<SavedLogin | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new LocalIoError(`cannot read the login file ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
  try {
    const parsed = JSON.parse(text) as { url?: unknown; token?: unknown; kube?: unknown; namespace?: unknown };
    const namespace = typeof parsed.namespace === 'string' ? { namespace: parsed.namespace } : {};
    if (typeof parsed.url === 'string' && typeof parsed.token === 'string') return { url: parsed.url, token: parsed.token, ...namespace };
    if (typeof parsed.url === 'string' && parsed.kube === true) return { url: parsed.url, kube: true, ...namespace };
  } catch (cause) {
    throw new LocalIoError(`the login file ${path} is not valid JSON`, { cause, hint: 'run fnhost login again to rewrite it' });
  }
  throw new LocalIoError(`the login file ${path} lacks "url", or "token" (or "kube": true)`, { hint: 'run fnhost login again to rewrite it' });
}

/** Writes the login with mode 0600 (directory 0700), replacing the file atomically. */
export async function writeLogin(path: string, login: SavedLogin): Promise<void> {
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const temp = `${path}.${process.pid}.tmp`;
    const saved = { url: login.url, ...(login.kube ? { kube: true } : { token: login.token }), ...(login.namespace === undefined ? {} : { namespace: login.namespace }) };
    await writeFile(temp, JSON.stringify(saved, null, 2) + '\n', { mode: 0o600 });
    await chmod(temp, 0o600);
    await rename(temp, path);
  } catch (err) {
    throw new LocalIoError(`cannot write the login file ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
}
