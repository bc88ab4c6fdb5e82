import { expect } from 'chai';
import { startHarness, type Harness } from './harness.ts';

// One machine has one namespace, `default`: the management API's ?namespace=
// (used by the CLI's --namespace against a cluster) accepts it and refuses others.
describe('gateway: ?namespace= on one machine', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  it('accepts the default namespace, refuses another with 400 naming it, and checks the name', async () => {
    const created = await h.api('POST', '/api/v1/functions?namespace=default', { name: 'ns-one', code: 'export default (req, res) => res.json({ ok: true })' });
    expect(created.status).to.equal(201);
    expect(created.body.namespace).to.equal('default');
    expect((await h.api('GET', '/api/v1/functions/ns-one?namespace=default')).status).to.equal(200);
    expect((await h.api('GET', '/api/v1/functions?namespace=default')).body.functions.map((f: { name: string }) => f.name)).to.include('ns-one');
    const other = await h.api('GET', '/api/v1/functions/ns-one?namespace=team-a');
    expect(other.status).to.equal(400);
    expect(other.body.message).to.contain('namespace "team-a" does not exist here');
    const bad = await h.api('GET', '/api/v1/functions?namespace=Team_A');
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.contain('is invalid: a DNS-1123 label');
    const twice = await h.api('GET', '/api/v1/functions?namespace=default&namespace=default');
    expect(twice.status).to.equal(400);
    // A UUID is found whatever namespace is named (ids are global).
    expect((await h.api('GET', `/api/v1/functions/${created.body.function_id}`)).status).to.equal(200);
  });

  it('lists with all_namespaces=true (the CLI\'s -A) as well, every function carrying its namespace; not with a namespace too', async () => {
    const all = await h.api('GET', '/api/v1/functions?all_namespaces=true');
    expect(all.status).to.equal(200);
    expect(all.body.functions.find((f: { name: string }) => f.name === 'ns-one')).to.include({ namespace: 'default' });
    const both = await h.api('GET', '/api/v1/functions?all_namespaces=true&namespace=default');
    expect(both.status).to.equal(400);
    expect(both.body.message).to.equal('all_namespaces=true and namespace exclude each other');
    expect((await h.api('GET', '/api/v1/functions?all_namespaces=yes')).status).to.equal(400);
    // The 401 names the kinds of token this gateway takes: one machine, the admin token only.
    const res = await fetch(`${h.url}/api/v1/functions`);
    expect(res.status).to.equal(401);
    expect(res.headers.get('fnhost-token-kinds')).to.equal('admin');
  });

  it('GET /api/v1/info says one machine and its namespace, behind the admin token', async () => {
    const info = await h.api('GET', '/api/v1/info');
    expect(info.status).to.equal(200);
    expect(info.body).to.deep.equal({ mode: 'local', default_namespace: 'default', sandbox: { enabled: true } });
    expect((await h.api('GET', '/api/v1/info', undefined, 'wrong-token')).status).to.equal(401);
  });
});
