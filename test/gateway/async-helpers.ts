import { expect } from 'chai';
import type { MongoTestServer } from '../helpers/mongo-server.ts';
import type { RunningGateway } from '../helpers/platform.ts';

// What the async invocation tests share (issue 33).

/** A database of this run's own on the server, so runs never meet each other's calls. */
export function databaseUrl(server: MongoTestServer, name: string): string {
  const parsed = new URL(server.url);
  parsed.pathname = `/${name}_${process.pid}_${Date.now()}`;
  return parsed.toString();
}

/** A management API call with the gateway's own token; the body parsed when there is one. */
export async function api(gw: RunningGateway, method: string, path: string, body?: unknown) {
  const r = await fetch(gw.url + path, { method, headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** Creates a function (201 expected); its id. */
export async function create(gw: RunningGateway, name: string, code: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await api(gw, 'POST', '/api/v1/functions', { name, code, ...extra });
  expect(r.status, JSON.stringify(r.body)).to.equal(201);
  return r.body.function_id as string;
}
