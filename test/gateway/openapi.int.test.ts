import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { startHarness, type Harness } from './harness.ts';

// Every route the app serves is described in gateway/openapi.yaml, and the
// document describes no route the app lacks.

const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options'];

/** `paths:` of our own document: two-space path keys, four-space method keys. */
export function documentedRoutes(yaml: string): Set<string> {
  const out = new Set<string>();
  const lines = yaml.split('\n');
  let inPaths = false;
  let path: string | undefined;
  for (const line of lines) {
    if (/^\S/.test(line)) inPaths = line.startsWith('paths:');
    if (!inPaths) continue;
    const p = /^  (\/\S*):\s*$/.exec(line);
    if (p) path = p[1];
    const m = /^    ([a-z]+):/.exec(line);
    if (m && path !== undefined && METHODS.includes(m[1]!)) out.add(`${m[1]!.toUpperCase()} ${path}`);
  }
  return out;
}

describe('gateway OpenAPI document', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h?.close();
  });

  it('lists exactly the routes the app serves', async () => {
    const yaml = await readFile(fileURLToPath(new URL('../../gateway/openapi.yaml', import.meta.url)), 'utf8');
    const documented = documentedRoutes(yaml);
    const served = new Set<string>();
    for (const router of h.platform.routers) {
      for (const layer of router.stack) {
        if (layer.methods.length === 0) continue; // router-level middleware
        const base = String(layer.path).replace(/:(\w+)/g, '{$1}').replace(/\/$/, '');
        // An optional wildcard tail (`/admin{/*rest}`) is two documented paths.
        const paths = base.includes('{/*') ? [base.replace(/\{\/\*(\w+)\}/, ''), base.replace(/\{\/\*(\w+)\}/, '/{$1}')] : [base];
        for (const path of paths) {
          for (const method of layer.methods) {
            // Koa answers HEAD for every GET; the document lists HEAD only where it differs.
            if (method === 'HEAD' && layer.methods.includes('GET')) continue;
            served.add(`${method} ${path}`);
          }
        }
      }
    }
    // The invocation path is served by node:http directly (see gateway/src/invoke/proxy.ts): every method.
    for (const path of ['/invoke/{functionId}', '/invoke/{functionId}/{subPath}', '/async-invoke/{functionId}', '/async-invoke/{functionId}/{subPath}']) for (const m of METHODS) served.add(`${m.toUpperCase()} ${path}`);
    // So is the async call's capability URL (gateway/src/async/acceptor.ts).
    served.add('GET /async-calls/{functionId}/{asyncId}');
    const missing = [...served].filter((r) => !documented.has(r));
    const extra = [...documented].filter((r) => !served.has(r));
    expect(missing, 'served but not documented').to.deep.equal([]);
    expect(extra, 'documented but not served').to.deep.equal([]);
    expect(served.size).to.be.greaterThan(30);
  });
});
