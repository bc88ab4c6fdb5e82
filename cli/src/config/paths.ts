import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** $XDG_CONFIG_HOME/fnhost/config.json, else ~/.config/fnhost/config.json. */
export function loginFilePath(env: Record<string, string | undefined>, home = homedir()): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(home, '.config');
  return join(base, 'fnhost', 'config.json');
}

export const LOCAL_DEFAULT_URL = 'http://127.0.0.1:8080';

/** The token file the local platform writes in its data directory: FNHOST_DATA_DIR, else ./.fnhost (as the gateway). */
export function localTokenPath(cwd: string, env: Record<string, string | undefined> = {}): string {
  const dataDir = env.FNHOST_DATA_DIR?.trim();
  return dataDir ? resolve(cwd, dataDir, 'token') : join(cwd, '.fnhost', 'token');
}
