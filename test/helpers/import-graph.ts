import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

// The repository's import graph, read with TypeScript's own pre-processor (static imports,
// `import type`, re-exports and dynamic `import()` alike), so that a type-only import closes a
// circle as surely as a value import does. Pure functions over the graph; the reading is the
// only I/O.

/** Edges between the repository's source files, as paths relative to the repository. */
export type ImportGraph = Map<string, string[]>;

const SOURCE = /\.(ts|tsx)$/;

/** Where a workspace package's specifier leads inside the repository. */
const WORKSPACES: Record<string, string> = {
  '@fnhost/core': 'core/src',
};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name === 'vendor') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The file a specifier names, or undefined for a package outside the repository (or a missing file). */
export function resolveSpecifier(repo: string, fromFile: string, specifier: string): string | undefined {
  let target: string | undefined;
  if (specifier.startsWith('.')) target = resolve(dirname(fromFile), specifier);
  else {
    for (const [name, folder] of Object.entries(WORKSPACES)) {
      if (specifier === name) target = join(repo, folder, 'index.ts');
      else if (specifier.startsWith(name + '/')) target = join(repo, folder, specifier.slice(name.length + 1));
    }
  }
  if (target === undefined) return undefined;
  for (const candidate of [target, target.replace(/\.js$/, '.ts'), target + '.ts', target + '.tsx', join(target, 'index.ts')]) {
    if (SOURCE.test(candidate) && existsSync(candidate)) return relative(repo, candidate);
  }
  return undefined;
}

/** Reads every source file under the given folders (relative to repo) and its imports within the repository. */
export function readImportGraph(repo: string, folders: string[]): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const folder of folders) {
    for (const file of sourceFiles(join(repo, folder))) {
      const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
      const targets = info.importedFiles.map((f) => resolveSpecifier(repo, file, f.fileName)).filter((t): t is string => t !== undefined);
      graph.set(relative(repo, file), [...new Set(targets)]);
    }
  }
  return graph;
}

/** Every circle of imports (strongly connected components of more than one file, or a file importing itself). */
export function importCycles(graph: ImportGraph): string[][] {
  // Tarjan's algorithm, iterative so that a long chain cannot overflow the stack.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; edge: number }> = [{ node: root, edge: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++]!;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || edges.includes(frame.node)) found.push(component.sort());
      }
    }
  }
  return found;
}

/** Imports from a file under `from` into a file under any of `forbidden` (folders relative to the repository). */
export function forbiddenImports(graph: ImportGraph, from: string, forbidden: string[]): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    if (!file.startsWith(from + '/')) continue;
    for (const target of targets) if (forbidden.some((f) => target.startsWith(f + '/'))) out.push(`${file} -> ${target}`);
  }
  return out;
}
