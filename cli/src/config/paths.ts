import { homedir } from 'node:os';
import { join } from 'node:path';

/** $XDG_CONFIG_HOME/fnhost/config.json, else ~/.config/fnhost/config.json. */
export function loginFilePath(env: Record<string, string | undefined>, home = homedir()): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(home, '.config');
  return join(base, 'fnhost', 'config.json');
}

export const LOCAL_DEFAULT_URL = 'http://127.0.0.1:8080';

/** The token file the local platform writes in the directory it runs from. */
export function localTokenPath(cwd: string): string {
  return join(cwd, '.fnhost', 'token');
}
