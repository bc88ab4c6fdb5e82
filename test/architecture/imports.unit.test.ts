import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { forbiddenImports, importCycles, readImportGraph, type ImportGraph } from '../helpers/import-graph.ts';

// ARCHITECTURE.md's rule, kept by a test: imports run one way (gateway, operator and cli use
// core; core uses none of them; cli and admin never import gateway or operator; gateway and
// operator meet only through the API server and the stores; runtime-image imports nothing of
// fnhost), and no folder's files import each other in a circle, type imports included.

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const FOLDERS = ['core/src', 'gateway/src', 'operator/src', 'cli/src', 'admin/src', 'runtime-image/src'];

describe('the import graph', () => {
  let graph: ImportGraph;
  before(() => {
    graph = readImportGraph(REPO, FOLDERS);
  });

  it('reads every package (the reading itself works: a known edge is there)', () => {
    expect(graph.get('gateway/src/invoke/proxy.ts')).to.include('gateway/src/executor/errors.ts');
    expect(graph.get('gateway/src/app.ts')).to.include('core/src/index.ts');
    expect(graph.size).to.be.greaterThan(200);
  });

  it('has no circle of imports anywhere, type imports included', () => {
    const cycles = importCycles(graph);
    expect(cycles, `circles:\n${cycles.map((c) => c.join(' <-> ')).join('\n')}`).to.deep.equal([]);
  });

  it('runs one way between the packages', () => {
    expect(forbiddenImports(graph, 'core/src', ['gateway/src', 'operator/src', 'cli/src', 'admin/src', 'runtime-image/src'])).to.deep.equal([]);
    expect(forbiddenImports(graph, 'cli/src', ['gateway/src', 'operator/src', 'admin/src', 'runtime-image/src'])).to.deep.equal([]);
    expect(forbiddenImports(graph, 'admin/src', ['gateway/src', 'operator/src', 'cli/src', 'runtime-image/src'])).to.deep.equal([]);
    expect(forbiddenImports(graph, 'gateway/src', ['operator/src', 'cli/src', 'admin/src'])).to.deep.equal([]);
    expect(forbiddenImports(graph, 'operator/src', ['gateway/src', 'cli/src', 'admin/src'])).to.deep.equal([]);
    expect(forbiddenImports(graph, 'runtime-image/src', ['core/src', 'gateway/src', 'operator/src', 'cli/src', 'admin/src'])).to.deep.equal([]);
  });
});

describe('importCycles (pure)', () => {
  it('finds a circle of three, a self-import, and nothing in a tree', () => {
    const g: ImportGraph = new Map([
      ['a', ['b']], ['b', ['c']], ['c', ['a', 'd']], ['d', []],
      ['s', ['s']],
      ['t', ['u', 'v']], ['u', ['v']], ['v', []],
    ]);
    expect(importCycles(g)).to.deep.equal([['a', 'b', 'c'], ['s']]);
  });

  it('finds the circle this repository had (a type import closing it)', () => {
    const g: ImportGraph = new Map([
      ['api/functions.ts', ['invoke/proxy.ts']],
      ['invoke/proxy.ts', ['executor/local.ts']],
      ['executor/local.ts', ['sandbox/sandbox.ts']],
      ['sandbox/sandbox.ts', ['egress/start.ts']],
      ['egress/start.ts', ['internal/routes.ts']],
      ['internal/routes.ts', ['api/policy.ts']],
      ['api/policy.ts', ['api/functions.ts']],
    ]);
    expect(importCycles(g)).to.have.length(1);
    expect(importCycles(g)[0]).to.have.length(7);
  });
});
