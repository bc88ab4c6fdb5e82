import type { MongoTestServer } from '../helpers/mongo-server.ts';

// What the async invocation tests share (issue 33).

/** A database of this run's own on the server, so runs never meet each other's calls. */
export function databaseUrl(server: MongoTestServer, name: string): string {
  const parsed = new URL(server.url);
  parsed.pathname = `/${name}_${process.pid}_${Date.now()}`;
  return parsed.toString();
}
