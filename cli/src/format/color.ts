// Colour decisions and ANSI painting for the non-Ink paths. Colours appear only
// on a terminal that supports them; NO_COLOR (any non-empty value) turns them
// off and FORCE_COLOR turns them on (FORCE_COLOR=0 off), as https://no-color.org
// and the chalk/supports-color convention describe.

export interface Painter {
  readonly enabled: boolean;
  green(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

export function colorEnabled(env: Record<string, string | undefined>, isTTY: boolean): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== '') return force !== '0' && force !== 'false';
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (!isTTY) return false;
  return env.TERM !== 'dumb';
}

function wrap(open: number, close: number, enabled: boolean) {
  return enabled ? (text: string) => `\u001b[${open}m${text}\u001b[${close}m` : (text: string) => text;
}

export function createPainter(enabled: boolean): Painter {
  return {
    enabled,
    green: wrap(32, 39, enabled),
    red: wrap(31, 39, enabled),
    yellow: wrap(33, 39, enabled),
    dim: wrap(2, 22, enabled),
    bold: wrap(1, 22, enabled),
  };
}
