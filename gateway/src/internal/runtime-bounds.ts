import type { GatewayConfig } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { ConnectionCounts, ConnectionGuard, RefusalLog } from './connection-bound.ts';
import { ConsoleRate, ExecutionIds, type ConsoleRateError } from './console-rate.ts';
import { CodeFetchBound, type CodeFetchBoundError } from '../code/fetch-bound.ts';

// The bounds on what runtimes ask of the gateway (docs/security.md "Resources: internal API,
// egress, console"), made once from the configuration: open connections per function on the
// internal API and on the egress proxy, console posts per function, and code fetches per function
// (docs/security.md "Resources: code fetches").

export interface RuntimeBounds {
  internalConnections: ConnectionGuard;
  egressConnections: ConnectionGuard;
  executions: ExecutionIds;
  console: { rate: ConsoleRate; executions: ExecutionIds; allExecutionsHere: boolean; onRefused: (functionId: string, err: ConsoleRateError) => void };
  codeFetches: { fetches: CodeFetchBound; now: () => number; onRefused: (functionId: string, err: CodeFetchBoundError) => void };
}

export function runtimeBounds(config: GatewayConfig, metrics: Metrics, logger: Logger, options: { allExecutionsHere: boolean; serviceOfAddress?: (address: string) => string | undefined }): RuntimeBounds {
  const log = new RefusalLog(logger);
  const c = config.runtimeConnections;
  const guard = (limit: number, reason: 'internal_connections_per_function' | 'egress_connections_per_function', what: string) =>
    new ConnectionGuard({ counts: new ConnectionCounts(limit), reason, what, metrics, log, firstRequestTimeoutMs: c.firstRequestTimeoutMs, serviceOfAddress: options.serviceOfAddress });
  const executions = new ExecutionIds();
  return {
    internalConnections: guard(c.internalPerFunction, 'internal_connections_per_function', 'internal API'),
    egressConnections: guard(c.egressPerFunction, 'egress_connections_per_function', 'egress proxy'),
    executions,
    console: {
      rate: new ConsoleRate(config.consoleRate),
      executions,
      allExecutionsHere: options.allExecutionsHere,
      onRefused: (functionId, err) => {
        metrics.refused('console_rate');
        log.refused('console_rate', functionId, 'console output refused: the function is over its rate bound', { function_id: functionId, retry_after_seconds: err.retryAfterSeconds });
      },
    },
    codeFetches: {
      fetches: new CodeFetchBound(config.codeFetches),
      now: () => performance.now(),
      onRefused: (functionId, err) => {
        metrics.refused(err.reason);
        log.refused(err.reason, functionId, 'code fetch refused: the function is over its bound on fetches of its code', { function_id: functionId, retry_after_seconds: err.retryAfterSeconds });
      },
    },
  };
}
