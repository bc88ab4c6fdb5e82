import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

// What can be checked of the chart without helm: the CRD copy, the values'
// documentation, and that the schema knows every value. Rendering, the API
// server's acceptance and RBAC are checked on the test cluster
// (test/charts/chart.cluster.test.ts).

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('chart: charts/fnhost without helm', () => {
  it('carries exactly the CRD of crds/ (run `make chart-crd` after changing it)', async () => {
    const source = await readFile(`${ROOT}crds/fnhost.dev_functions.yaml`, 'utf8');
    const copy = await readFile(`${ROOT}charts/fnhost/crds/fnhost.dev_functions.yaml`, 'utf8');
    expect(copy === source, 'charts/fnhost/crds/fnhost.dev_functions.yaml differs from crds/fnhost.dev_functions.yaml: run make chart-crd').to.equal(true);
  });

  it('documents every setting of values.yaml with a comment above it (free-form Kubernetes blocks aside)', async () => {
    const lines = (await readFile(`${ROOT}charts/fnhost/values.yaml`, 'utf8')).split('\n');
    const freeForm = new Set(['resources', 'probes', 'image']);
    const parents: Array<{ indent: number; key: string }> = [];
    const undocumented: string[] = [];
    lines.forEach((line, i) => {
      const m = /^(\s*)([A-Za-z][\w]*):/.exec(line);
      if (m === null) return;
      const indent = m[1]!.length;
      while (parents.length > 0 && parents[parents.length - 1]!.indent >= indent) parents.pop();
      const path = [...parents.map((p) => p.key), m[2]!].join('.');
      const inFreeForm = parents.some((p) => freeForm.has(p.key));
      parents.push({ indent, key: m[2]! });
      if (inFreeForm) return;
      let j = i - 1;
      while (j >= 0 && lines[j]!.trim() === '') j--;
      if (j < 0 || !lines[j]!.trim().startsWith('#')) undocumented.push(`${path} (line ${i + 1})`);
    });
    expect(undocumented).to.deep.equal([]);
  });

  it('has a schema that names every top-level and component value, and refuses unknown ones', async () => {
    const schema = JSON.parse(await readFile(`${ROOT}charts/fnhost/values.schema.json`, 'utf8'));
    const yaml = (await import('js-yaml')) as unknown as { load(text: string): unknown };
    const values = yaml.load(await readFile(`${ROOT}charts/fnhost/values.yaml`, 'utf8')) as Record<string, unknown>;
    expect(schema.additionalProperties).to.equal(false);
    for (const [key, value] of Object.entries(values)) {
      expect(schema.properties, `schema of ${key}`).to.have.property(key);
      if (value !== null && typeof value === 'object' && !Array.isArray(value) && schema.properties[key].properties) {
        for (const sub of Object.keys(value)) expect(schema.properties[key].properties, `schema of ${key}.${sub}`).to.have.property(sub);
      }
    }
  });

  it('gives the admin panel its own port and Ingress host; the main host serves /invoke and /api, never the panel', async () => {
    const yaml = (await import('js-yaml')) as unknown as { load(text: string): unknown };
    const values = yaml.load(await readFile(`${ROOT}charts/fnhost/values.yaml`, 'utf8')) as { gateway: { service: Record<string, unknown> }; ingress: Record<string, unknown> };
    expect(values.ingress.paths).to.deep.equal(['/invoke', '/api']);
    expect(values.ingress.adminHost).to.equal('');
    expect(values.gateway.service).to.include({ port: 8080, adminPort: 8081 });
    const deployment = await readFile(`${ROOT}charts/fnhost/templates/gateway/deployment.yaml`, 'utf8');
    expect(deployment).to.contain('{ name: admin, containerPort: 8081, protocol: TCP }').and.to.contain('{ name: FNHOST_ADMIN_PORT, value: "8081" }');
    const service = await readFile(`${ROOT}charts/fnhost/templates/gateway/service.yaml`, 'utf8');
    expect(service).to.match(/- name: admin\s+port: \{\{ \.Values\.gateway\.service\.adminPort \}\}\s+targetPort: admin/);
    const ingress = await readFile(`${ROOT}charts/fnhost/templates/gateway/ingress.yaml`, 'utf8');
    expect(ingress).to.contain('.Values.ingress.adminHost').and.to.contain('port: { name: admin }');
    const helpers = await readFile(`${ROOT}charts/fnhost/templates/_helpers.tpl`, 'utf8');
    expect(helpers).to.contain('ingress.adminHost must differ from ingress.host').and.to.contain('ingress.paths must not hold');
  });

  it("keeps operator/deploy/rbac.yaml's ClusterRole to the chart's operator rules with the default values (the pool off)", async () => {
    const yaml = (await import('js-yaml')) as unknown as { load(text: string): unknown; loadAll(text: string): unknown[] };
    const values = yaml.load(await readFile(`${ROOT}charts/fnhost/values.yaml`, 'utf8')) as { pool: { size: number } };
    expect(values.pool.size, 'the reference is for the default values: the pool off').to.equal(0);
    const helpers = await readFile(`${ROOT}charts/fnhost/templates/_helpers.tpl`, 'utf8');
    const start = helpers.indexOf('{{- define "fnhost.operator.rules" -}}');
    expect(start, 'the fnhost.operator.rules helper').to.be.at.least(0);
    const block = helpers.slice(start, helpers.indexOf('{{- end -}}', start)).split('\n').slice(1).join('\n');
    // With pool.size 0 the pool's conditional rules are not rendered; no other template code is expected.
    const rendered = block.replace(/\{\{- if gt \(int \.Values\.pool\.size\) 0 \}\}[\s\S]*?\{\{- end \}\}/, '');
    expect(rendered, 'template code left in fnhost.operator.rules that this test does not render').not.to.contain('{{');
    const chartRules = yaml.load(rendered) as unknown[];
    const reference = yaml.loadAll(await readFile(`${ROOT}operator/deploy/rbac.yaml`, 'utf8')) as Array<{ kind: string; rules?: unknown[] }>;
    const clusterRole = reference.find((d) => d?.kind === 'ClusterRole');
    const key = (rules: unknown[]) => rules.map((r) => JSON.stringify(r)).sort();
    expect(key(clusterRole!.rules!)).to.deep.equal(key(chartRules));
  });
});
