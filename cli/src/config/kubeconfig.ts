import { readFile, stat } from 'node:fs/promises';
import { delimiter, resolve } from 'node:path';
import { LocalIoError } from '../errors.ts';

// The namespace of the current kube context, read the way kubectl reads it.
//
// Which files: KUBECONFIG, a list separated by ':' (';' on Windows) whose
// entries are resolved against the working directory; empty entries and
// repeated files are dropped and missing files are skipped (as kubectl does).
// An empty or unset KUBECONFIG means ~/.kube/config. No file at all means no
// kube context, never an error.
//
// Each file is parsed by @kubernetes/client-node's KubeConfig.loadFromString
// (no YAML parsing of our own). Its loadFromDefault is not used: it reads
// process.env itself, fails on a listed file that is missing and on a context
// name defined in two files, and lets a later file's current-context win.
// kubectl's merge is done here instead: the first file that sets
// current-context wins, and the first file that defines a context by a name
// wins for that name.
//
// client-node is a heavy import (0.2-0.35 s on the build machine even with the
// compile cache), so the caller loads it only when the kube context is
// actually consulted (docs/cli.md, Namespaces, Cost).

/** Files larger than this are refused rather than read (a kubeconfig is a few KiB). */
export const MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024;

/** One existing kubeconfig file: its text, or why it could not be read. */
export interface KubeconfigFile {
  path: string;
  text?: string;
  error?: string;
}

/** What the caller needs of client-node's KubeConfig (the real class fits). */
export interface KubeConfigLike {
  loadFromString(text: string, opts?: { onInvalidEntry: 'filter' }): void;
  getCurrentContext(): string;
  getContexts(): ReadonlyArray<{ name: string; namespace?: string }>;
}
export type KubeConfigClass = new () => KubeConfigLike;

/** The current kube context: its name, its namespace (undefined: none set), and the files involved. */
export interface KubeContext {
  context: string;
  namespace: string | undefined;
  /** The file that defines the context. */
  file: string;
  /** The file whose current-context names it. */
  currentContextFile: string;
}

/** KUBECONFIG's files, else ~/.kube/config; absolute, in order, without repeats. */
export function kubeconfigPaths(env: Record<string, string | undefined>, home: string, cwd: string): string[] {
  const list = env.KUBECONFIG;
  if (list === undefined || list === '') return [resolve(home, '.kube', 'config')];
  const paths: string[] = [];
  for (const entry of list.split(delimiter)) {
    if (entry === '') continue;
    const path = resolve(cwd, entry);
    if (!paths.includes(path)) paths.push(path);
  }
  return paths;
}

/** The listed files that exist, with their text or the reason they could not be read; missing ones are left out. */
export async function readKubeconfigFiles(paths: readonly string[]): Promise<KubeconfigFile[]> {
  const files = await Promise.all(
    paths.map(async (path): Promise<KubeconfigFile | undefined> => {
      try {
        const info = await stat(path);
        if (!info.isFile()) return { path, error: 'not a regular file' };
        if (info.size > MAX_KUBECONFIG_BYTES) return { path, error: `larger than ${MAX_KUBECONFIG_BYTES / 1024 / 1024} MiB` };
        return { path, text: await readFile(path, 'utf8') };
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
        return { path, error: code ?? (err as Error).message };
      }
    }),
  );
  return files.filter((f): f is KubeconfigFile => f !== undefined);
}

const HINT = 'fix the file, or name the namespace with --namespace (or FNHOST_NAMESPACE, or fnhost login --namespace) so the kube context is not read';

/** The reason a YAML or kubeconfig error gives, on one line. */
function reason(err: unknown): string {
  const e = err as { reason?: unknown; mark?: { line?: unknown; column?: unknown }; message?: unknown };
  if (typeof e.reason === 'string' && typeof e.mark?.line === 'number') {
    return `${e.reason} (line ${e.mark.line + 1}${typeof e.mark.column === 'number' ? `, column ${e.mark.column + 1}` : ''})`;
  }
  if (err instanceof TypeError) return 'it is not a YAML mapping';
  return String(e.message ?? err).split('\n')[0]!;
}

/**
 * The current context of the merged files (kubectl's rules), or undefined when
 * no file sets current-context. Throws a LocalIoError naming the file when a
 * file cannot be read or parsed, or when current-context names a context that
 * no file defines.
 */
export function currentKubeContext(files: readonly KubeconfigFile[], KubeConfig: KubeConfigClass): KubeContext | undefined {
  let current: { name: string; file: string } | undefined;
  const contexts = new Map<string, { namespace: string | undefined; file: string }>();
  for (const file of files) {
    if (file.error !== undefined || file.text === undefined) {
      throw new LocalIoError(`cannot read the kubeconfig file ${file.path} (${file.error ?? 'no content'})`, { hint: HINT });
    }
    // An empty file is an empty config for kubectl; client-node would fail on it.
    if (file.text.trim() === '') continue;
    const kc = new KubeConfig();
    try {
      // Entries client-node finds incomplete (a cluster without a server...) are
      // skipped instead of failing the whole file: only contexts matter here.
      kc.loadFromString(file.text, { onInvalidEntry: 'filter' });
    } catch (cause) {
      throw new LocalIoError(`the kubeconfig file ${file.path} is not valid: ${reason(cause)}`, { hint: HINT, cause });
    }
    const name = kc.getCurrentContext();
    if (current === undefined && typeof name === 'string' && name !== '') current = { name, file: file.path };
    for (const ctx of kc.getContexts()) {
      // YAML may make a namespace a number (`namespace: 7`): kept as text, then checked as a name.
      const namespace = ctx.namespace === undefined || ctx.namespace === null || (ctx.namespace as unknown) === '' ? undefined : String(ctx.namespace);
      if (!contexts.has(ctx.name)) contexts.set(ctx.name, { namespace, file: file.path });
    }
  }
  if (current === undefined) return undefined;
  const found = contexts.get(current.name);
  if (found === undefined) {
    throw new LocalIoError(`the current kube context "${current.name}" (current-context in ${current.file}) is not defined in ${files.map((f) => f.path).join(', ')} (a context needs a name and a cluster)`, {
      hint: `pick one with kubectl config use-context, or ${HINT.replace(/^fix the file, or /, '')}`,
    });
  }
  return { context: current.name, namespace: found.namespace, file: found.file, currentContextFile: current.file };
}
