import { mkdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Stores } from '@fnhost/core';
import { openMongoStores, redactUrl } from '@fnhost/core/store/mongo/index.ts';
import { openMongoStoresPatiently } from '@fnhost/core/store/mongo/open-patiently.ts';
import { openSqliteStores } from '@fnhost/core/store/sqlite/index.ts';
import { resolveSecretFiles } from '@fnhost/core/secret-files.ts';
import { logProcessWarnings } from '@fnhost/core/process-warnings.ts';
import type { GatewayConfig } from './config.ts';
import { loadAdminToken } from './auth.ts';
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts';
import { loadConfig } from './config.ts';
import { startPlatform, type Platform } from './app.ts';
import { panelUrl } from './admin/panel-host.ts';
import { isClusterMode, loadClusterSettings } from './cluster/settings.ts';
import { stdoutLogger as logger } from './log.ts';
import { installLastResort } from './last-resort.ts';
import { raiseNofile } from './resources/descriptors.ts';
import { loadResourceSettings } from './resources/settings.ts';

// `npm run start`: one gateway on this machine. Prints one JSON line
// `{"msg":"gateway listening","url":...,"admin_url":...}` (the test helper
// reads it; admin_url is the panel's own listener), then a
// short quick start for people. With FNHOST_MODE=cluster the same program is
// the gateway of a Kubernetes installation (docs/install.md): functions come
// from Function resources, calls go to the functions' pods, and every store
// is MongoDB.

let lock: DataDirLock | undefined;
let running: Platform<import('@fnhost/core').Executor> | undefined;
// An error no task caught: survived when a resource ran out at a system call, the end otherwise (last-resort.ts).
installLastResort({ logger, background: () => running?.background });

/** Settings that may come from a file instead (NAME_FILE; docs/install.md, Secrets as files). */
const GATEWAY_SECRET_SETTINGS = ['FNHOST_TOKEN', 'FNHOST_TOKEN_KEY', 'MONGODB_URL', 'FNHOST_METRICS_TOKEN'] as const;

async function main(): Promise<void> {
  logProcessWarnings((msg, fields) => logger.warn(msg, fields));
  // Read into this copy only: process.env (which runtimes started on one machine inherit from) never holds them.
  const env = resolveSecretFiles(process.env, GATEWAY_SECRET_SETTINGS);
  const config = loadConfig(env);
  const clusterMode = isClusterMode(env);
  // Parsed before anything starts, so a bad setting stops the start with its name.
  const clusterSettings = clusterMode ? loadClusterSettings(env) : undefined;
  const resources = loadResourceSettings(env);
  // Before anything opens a descriptor: as root, the hard RLIMIT_NOFILE is raised (resources/descriptors.ts).
  const nofile = raiseNofile(resources.nofileTarget);
  logger.info('descriptor limit', { soft: nofile.limits.soft, hard: nofile.limits.hard, note: nofile.note });
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  // Before anything reads or changes the data folder: a second gateway on it refuses here.
  lock = await lockDataDir(config.dataDir);
  const adminToken = await loadAdminToken(config.dataDir, config.token);
  const { stores, description } = await openStores(config, clusterMode);
  let platform: Platform<import('@fnhost/core').Executor>;
  if (clusterSettings !== undefined) {
    // Loaded only here: one machine never loads client-node.
    const { startCluster } = await import('./cluster/start.ts');
    const cluster = await startCluster({ settings: clusterSettings, logger, recentCounts: (id, since) => stores.logs.recentCounts(id, since), homes: stores.homes });
    platform = await startPlatform({ config, stores, adminToken, logger, cluster, resources, nofile: nofile.limits });
  } else {
    platform = await startPlatform({ config, stores, adminToken, logger, resources, nofile: nofile.limits });
  }
  running = platform;
  await lock.setUrl(platform.url);
  const held = lock;
  // One machine: the panel is opened at a host name of its own (admin/panel-host.ts); a cluster's panel has ingress.adminHost.
  const panelAddress = clusterMode ? `${platform.adminUrl}/admin/` : panelUrl(platform.adminUrl, config.adminHost);
  logger.info('gateway listening', { url: platform.url, admin_url: platform.adminUrl, panel_url: panelAddress, mode: clusterMode ? 'cluster' : 'local', data_dir: config.dataDir, store: description, token_source: adminToken.source, pid: process.pid });
  if (!clusterMode && (process.stdout.isTTY || process.env.FNHOST_QUIET !== '1')) {
    const tokenHint = adminToken.source === 'FNHOST_TOKEN' ? 'the token is the FNHOST_TOKEN you set' : `token: cat ${relative(process.cwd(), adminToken.file) || adminToken.file}`;
    process.stdout.write(
      `\nfnhost gateway on ${platform.url} (${tokenHint})\n` +
        `Admin panel: ${panelAddress} (its own port and host name, apart from function pages)\n` +
        'Quick start:\n' +
        `  export FNHOST_URL=${platform.url} FNHOST_TOKEN=$(cat ${relative(process.cwd(), adminToken.file) || adminToken.file})\n` +
        `  curl -s -H "Authorization: Bearer $FNHOST_TOKEN" -H 'content-type: application/json' $FNHOST_URL/api/v1/functions -d '{"name":"hello","code":"export default (req, res) => res.json({hello: req.query.name ?? \\"world\\"})"}'\n` +
        '  curl -s "$(curl -s -H "Authorization: Bearer $FNHOST_TOKEN" $FNHOST_URL/api/v1/functions/hello | node -p "JSON.parse(require(\'fs\').readFileSync(0)).invocation_url")?name=you"\n\n',
    );
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    platform.close().then(
      async () => {
        await held.release();
        logger.info('stopped', { pending_logs: platform.writer.depth, dropped_logs: platform.writer.dropped });
        process.exit(0);
      },
      (err: unknown) => {
        logger.error('shutdown failed', { error: (err as Error).message });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

// MongoDB when MONGODB_URL is set (a cluster, or one machine sharing a database),
// otherwise the embedded SQLite file in the data directory. The data directory
// is still used for the admin token and the runtimes' pid files.
async function openStores(config: GatewayConfig, clusterMode: boolean): Promise<{ stores: Stores; description: string }> {
  if (config.mongodbUrl !== undefined) {
    // On Kubernetes, wait for MongoDB (saying why, docs/install.md) instead of crash-looping on it.
    const stores = clusterMode
      ? await openMongoStoresPatiently({ url: config.mongodbUrl, log: logger })
      : await openMongoStores({ url: config.mongodbUrl, retry: { log: (msg, fields) => logger.warn(msg, fields) } });
    return { stores, description: `mongodb ${redactUrl(config.mongodbUrl)}` };
  }
  const path = join(config.dataDir, 'fnhost.db');
  return { stores: openSqliteStores({ path, backgroundCheckpoints: true }), description: `sqlite ${path}` };
}

main().catch(async (err: unknown) => {
  logger.error('gateway failed to start', { error: (err as Error).message, code: (err as { code?: string }).code });
  await lock?.release();
  process.exit(1);
});
