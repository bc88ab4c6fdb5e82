import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// A fixture project of test/fixtures/ copied to a temporary folder and its packages installed from
// the registry with `npm ci` (its package-lock.json pins them; npm's cache makes later runs local).
// --ignore-scripts: no package of them needs one, and the native-addon stand-in must not be built.

export const BUNDLE_FIXTURE = fileURLToPath(new URL('../fixtures/bundle-project/', import.meta.url));
/** pg (node-postgres) and a PostgreSQL wire-protocol server to run it against (PGlite). */
export const DRIVER_FIXTURE = fileURLToPath(new URL('../fixtures/driver-project/', import.meta.url));
/**
 * Handlers using real packages from npm at pinned versions (issue 30): zod 4, the mongodb driver,
 * @aws-sdk/client-s3. Their bundles are over the inline limit, so they go as code references.
 */
export const PACKAGE_FIXTURES = {
  zod: fileURLToPath(new URL('../fixtures/packages/zod/', import.meta.url)),
  mongodb: fileURLToPath(new URL('../fixtures/packages/mongodb/', import.meta.url)),
  s3: fileURLToPath(new URL('../fixtures/packages/s3/', import.meta.url)),
} as const;

export interface FixtureProject {
  dir: string;
  remove(): void;
}

export async function installFixtureProject(fixture = BUNDLE_FIXTURE): Promise<FixtureProject> {
  const dir = mkdtempSync(join(tmpdir(), 'fnhost-fixture-project-'));
  cpSync(fixture, dir, { recursive: true, filter: (src) => !src.includes('node_modules') });
  await promisify(execFile)('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, timeout: 180_000 });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
