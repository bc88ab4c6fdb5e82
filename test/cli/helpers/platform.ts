import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as helper from '../../helpers/platform.ts';
import { isolatedHome } from './run.ts';

// A real local platform (the gateway's test/helpers/platform.ts: a gateway
// process with its own data directory on port 0) plus what the CLI tests need
// around it: an isolated HOME and handler files on disk.

export interface CliPlatform {
  url: string;
  /** The admin panel's own listener (not the API the CLI talks to). */
  adminUrl: string;
  token: string;
  /** The environment of a CLI run against this platform. */
  env: Record<string, string>;
  home: string;
  /** Writes a handler module and returns its path. */
  file(name: string, source: string): string;
  stop(): Promise<void>;
}

/** A handler whose answer the request chooses: `{status, throw, echo}`. */
export const CONTROLLED_HANDLER = `
export default async function handler(req, res) {
  const body = req.body ?? {};
  if (body.throw) throw new Error(body.throw);
  res.status(body.status ?? 200).json({ method: req.method, path: req.path, query: req.query, body });
}
`;

export async function startCliPlatform(): Promise<CliPlatform> {
  const platform = await helper.startGateway();
  const home = isolatedHome();
  const files = mkdtempSync(join(tmpdir(), 'fnhost-cli-fns-'));
  return {
    url: platform.url,
    adminUrl: platform.adminUrl,
    token: platform.token,
    home: home.home,
    env: { ...home.env, FNHOST_URL: platform.url, FNHOST_TOKEN: platform.token },
    file(name, source) {
      const path = join(files, name);
      writeFileSync(path, source);
      return path;
    },
    async stop() {
      await platform.stop();
      home.cleanup();
      rmSync(files, { recursive: true, force: true });
    },
  };
}
