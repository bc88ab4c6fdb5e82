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
// Each file is parsed as YAML by js-yaml (YAML 1.2 core schema plus merge keys
// `<<`, as kubeconfigs written by hand sometimes use) and only what the CLI
// needs is taken from it, with explicit shape checks: `current-context`,
// `contexts[].name` and `contexts[].context.namespace`. Nothing else (clusters,
// users, a context's cluster and user) is read or checked: the CLI borrows the
// namespace, it does not talk to the cluster. kubectl's merge is done here: the
// first file that sets current-context wins, and the first file that defines a
// context by a name wins for that name.
//
// js-yaml is imported only when a kubeconfig is actually parsed (the caller
// passes the parser in; loadYamlParser is the default), so no other command
// path pays for it (docs/cli.md, Namespaces, Cost). @kubernetes/client-node
// did this job before and cost 0.35-0.5 s of start-up for its import alone.

/** Files larger than this are refused rather than read (a kubeconfig is a few KiB). */
export const MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024;

/** One existing kubeconfig file: its text, or why it could not be read. */
export interface KubeconfigFile {
  path: string;
  text?: string;
  error?: string;
}

/**
 * Parses a YAML stream into its documents; throws (js-yaml's YAMLException,
 * with `reason` and `mark`) when the text is not YAML. Injected so tests can
 * count when parsing happens; loadYamlParser gives the real one.
 */
export type YamlParser = (text: string) => unknown[];

/** The real parser: js-yaml, imported on first use (it is not on any other path). */
export async function loadYamlParser(): Promise<YamlParser> {
  const { loadAll, CORE_SCHEMA, mergeTag } = await import('js-yaml');
  // CORE_SCHEMA: null, booleans, numbers, strings, maps and lists; no dates or
  // binary. Aliases are kept as references (never expanded), and only a few
  // fields are walked below, so a file of aliases costs nothing extra.
  const schema = CORE_SCHEMA.withTags(mergeTag);
  return (text) => loadAll(text, { schema });
}

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

/** A shape error in a kubeconfig file: which field, and what is wrong with it. */
class ShapeError extends Error {}

/** The reason a YAML error gives, on one line, with its place in the file. */
function reason(err: unknown): string {
  if (err instanceof ShapeError) return err.message;
  const e = err as { reason?: unknown; mark?: { line?: unknown; column?: unknown }; message?: unknown };
  if (typeof e.reason === 'string' && typeof e.mark?.line === 'number') {
    return `${e.reason} (line ${e.mark.line + 1}${typeof e.mark.column === 'number' ? `, column ${e.mark.column + 1}` : ''})`;
  }
  return String(e.message ?? err).split('\n')[0]!;
}

type Mapping = Record<string, unknown>;

function isMapping(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What a YAML value is, for an error message. Never the value itself: a file
 * named by mistake may be a token or a key, and errors go to the terminal.
 */
function kind(value: unknown): string {
  if (value === null || value === undefined) return 'empty';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return 'text';
  return typeof value === 'number' ? 'a number' : 'a boolean';
}

/** A field of a mapping, own properties only (a key named like an Object.prototype member stays data). */
function field(map: Mapping, key: string): unknown {
  return Object.hasOwn(map, key) ? map[key] : undefined;
}

/**
 * A scalar field kubectl reads as a string, as text; undefined when absent,
 * null or empty. A number or boolean counts as its text (`namespace: 7` is
 * "7"), as kubectl's decoder turns a scalar into a string field; a list or a
 * mapping is a ShapeError naming the field.
 */
function text(value: unknown, path: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new ShapeError(`${path} is ${kind(value)}, not a string`);
}

/** What one kubeconfig file says about contexts: current-context and each context's namespace, in order. */
export interface KubeconfigContents {
  currentContext: string | undefined;
  contexts: Array<{ name: string; namespace: string | undefined }>;
}

/**
 * The fields the CLI needs of one parsed file, checked. An empty file (no
 * document, or a null one) is an empty config, as for kubectl. Throws a
 * ShapeError naming the field that has the wrong shape.
 */
export function kubeconfigContents(documents: readonly unknown[]): KubeconfigContents {
  if (documents.length > 1) throw new ShapeError(`it holds ${documents.length} YAML documents; a kubeconfig file is one`);
  const doc = documents[0];
  if (doc === undefined || doc === null) return { currentContext: undefined, contexts: [] };
  if (!isMapping(doc)) throw new ShapeError(`its top level is ${kind(doc)}, not a mapping`);
  const currentContext = text(field(doc, 'current-context'), 'current-context');
  const list = field(doc, 'contexts');
  if (list === undefined || list === null) return { currentContext, contexts: [] };
  if (!Array.isArray(list)) throw new ShapeError(`contexts is ${kind(list)}, not a list`);
  const contexts: KubeconfigContents['contexts'] = [];
  const seen = new Map<string, number>();
  list.forEach((entry: unknown, i) => {
    const at = `contexts[${i}]`;
    if (!isMapping(entry)) throw new ShapeError(`${at} is ${kind(entry)}, not a mapping with a name and a context`);
    const name = text(field(entry, 'name'), `${at}.name`);
    if (name === undefined) throw new ShapeError(`${at} has no name`);
    // kubectl refuses a file that defines a context twice, too.
    const first = seen.get(name);
    if (first !== undefined) throw new ShapeError(`${at}.name "${name}" is also the name of contexts[${first}]`);
    seen.set(name, i);
    const body = field(entry, 'context');
    if (body !== undefined && body !== null && !isMapping(body)) throw new ShapeError(`${at}.context is ${kind(body)}, not a mapping`);
    const namespace = body === undefined || body === null ? undefined : text(field(body, 'namespace'), `${at}.context.namespace`);
    contexts.push({ name, namespace });
  });
  return { currentContext, contexts };
}

/**
 * The current context of the merged files (kubectl's rules), or undefined when
 * no file sets current-context. Throws a LocalIoError naming the file when a
 * file cannot be read, is not YAML or has a field of the wrong shape, or when
 * current-context names a context that no file defines.
 */
export function currentKubeContext(files: readonly KubeconfigFile[], parseYaml: YamlParser): KubeContext | undefined {
  let current: { name: string; file: string } | undefined;
  const contexts = new Map<string, { namespace: string | undefined; file: string }>();
  for (const file of files) {
    if (file.error !== undefined || file.text === undefined) {
      throw new LocalIoError(`cannot read the kubeconfig file ${file.path} (${file.error ?? 'no content'})`, { hint: HINT });
    }
    let contents: KubeconfigContents;
    try {
      contents = kubeconfigContents(parseYaml(file.text));
    } catch (cause) {
      throw new LocalIoError(`the kubeconfig file ${file.path} is not valid: ${reason(cause)}`, { hint: HINT, cause });
    }
    if (current === undefined && contents.currentContext !== undefined) current = { name: contents.currentContext, file: file.path };
    for (const ctx of contents.contexts) {
      if (!contexts.has(ctx.name)) contexts.set(ctx.name, { namespace: ctx.namespace, file: file.path });
    }
  }
  if (current === undefined) return undefined;
  const found = contexts.get(current.name);
  if (found === undefined) {
    throw new LocalIoError(`the current kube context "${current.name}" (current-context in ${current.file}) is not defined in ${files.map((f) => f.path).join(', ')}`, {
      hint: `pick one with kubectl config use-context, or ${HINT.replace(/^fix the file, or /, '')}`,
    });
  }
  return { context: current.name, namespace: found.namespace, file: found.file, currentContextFile: current.file };
}
