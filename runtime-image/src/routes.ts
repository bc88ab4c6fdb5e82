// Route patterns of FNHOST_ROUTES → req.params: `/users/:userId/posts/:postId` and a trailing `*`
// (or `:name*`) that takes the rest of the path.

/** `decodeURIComponent`, or the text as it is when it holds a bad escape. */
function decodeSafe(s: string): string {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export interface CompiledRoute {
  pattern: string;
  segments: Array<{ param: string } | { literal: string } | { rest: string }>;
}

/** Compiles each pattern once, at start. */
export function compileRoutes(patterns: string[]): CompiledRoute[] {
  return patterns.map((pattern) => ({
    pattern,
    segments: pattern
      .split('/')
      .filter((s) => s !== '')
      .map((s) => {
        if (s === '*') return { rest: '0' };
        if (s.startsWith(':') && s.endsWith('*')) return { rest: s.slice(1, -1) };
        if (s.startsWith(':')) return { param: s.slice(1) };
        return { literal: s };
      }),
  }));
}

/** The params of the first route that matches the path (trailing slash ignored); `{}` when none does. */
export function matchRoute(routes: CompiledRoute[], path: string): Record<string, string> {
  if (routes.length === 0) return {};
  const parts = path.split('/').filter((s) => s !== '');
  outer: for (const route of routes) {
    const params: Record<string, string> = {};
    const segs = route.segments;
    for (let i = 0; i < segs.length; i++) {
      const seg = segs[i]!;
      if ('rest' in seg) {
        if (i >= parts.length) continue outer;
        params[seg.rest] = parts.slice(i).map(decodeSafe).join('/');
        return params;
      }
      const part = parts[i];
      if (part === undefined) continue outer;
      if ('literal' in seg) {
        if (seg.literal !== part) continue outer;
      } else {
        params[seg.param] = decodeSafe(part);
      }
    }
    if (parts.length === segs.length) return params;
  }
  return {};
}

