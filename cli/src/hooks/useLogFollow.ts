import { useEffect, useState } from 'react';
import type { ExecutionLog } from '@fnhost/core/model.ts';

// --follow on a terminal: the records shown so far, growing as polls find new
// ones. The poll function is injected (LogFollower.poll in the CLI).

export interface LogFollowState {
  logs: ExecutionLog[];
  error: string | undefined;
  polls: number;
}

export function useLogFollow(initial: ExecutionLog[], poll: () => Promise<ExecutionLog[]>, intervalMs: number): LogFollowState {
  const [state, setState] = useState<LogFollowState>({ logs: initial, error: undefined, polls: 0 });
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const fresh = await poll();
        if (!stopped) setState((s) => ({ logs: fresh.length > 0 ? [...s.logs, ...fresh] : s.logs, error: undefined, polls: s.polls + 1 }));
      } catch (err) {
        // A failed poll is shown and retried: a restarting server should not end the follow.
        if (!stopped) setState((s) => ({ ...s, error: err instanceof Error ? err.message : String(err), polls: s.polls + 1 }));
      }
      if (!stopped) timer = setTimeout(tick, intervalMs);
    };
    timer = setTimeout(tick, intervalMs);
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [poll, intervalMs]);
  return state;
}
