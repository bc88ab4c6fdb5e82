import type { RunResult } from '../invoke/exchange.ts';

/** The API's answer for a run outside HTTP (function:test, function:schedule:run): what a caller would have seen, the body parsed when JSON. */
export function runResultBody(result: RunResult): Record<string, unknown> {
  const type = result.headers['content-type'];
  let body: unknown = result.body.toString('utf8');
  if (typeof type === 'string' && /json/i.test(type) && !result.truncated) {
    try {
      body = JSON.parse(body as string);
    } catch {
      // keep the text
    }
  }
  return {
    log_id: result.log_id,
    status_code: result.status_code,
    execution_time_ms: result.execution_time_ms,
    error_message: result.error_message,
    headers: result.headers,
    body,
    ...(result.truncated ? { body_truncated: true } : {}),
  };
}
