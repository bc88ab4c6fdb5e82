import { MAX_INVOKE_BODY_BYTES, MAX_TIMEOUT_SECONDS } from '@fnhost/core/limits.ts';
import { UsageError } from '../errors.ts';
import type { TestRequest, TestResult } from '../api/types.ts';
import { createPainter, type Painter } from '../format/color.ts';
import { statusCell, statusKind } from '../format/logs-table.ts';
import { oneLine, printable } from '../format/text.ts';
import { functionRef, printJson, printLines, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

// function:test runs the function once through the management API and shows
// what a caller would have seen. A 5xx answer is a failed test: exit 1.

const METHOD = /^[A-Za-z]{1,16}$/;

export function buildTestRequest(options: { data?: string; method?: string; path?: string }): TestRequest {
  const request: TestRequest = { method: 'POST', path: '/', body: {} };
  if (options.method !== undefined) {
    if (!METHOD.test(options.method)) throw new UsageError(`--method "${options.method}" is not an HTTP method such as GET or POST`);
    request.method = options.method.toUpperCase();
  }
  if (options.path !== undefined) {
    if (!options.path.startsWith('/')) throw new UsageError(`--path "${options.path}" must start with "/"`);
    const [path, query] = options.path.split('?', 2) as [string, string | undefined];
    request.path = path;
    if (query) request.query = Object.fromEntries(new URLSearchParams(query));
  }
  if (options.data !== undefined) {
    if (Buffer.byteLength(options.data) > MAX_INVOKE_BODY_BYTES) throw new UsageError(`--data is larger than ${MAX_INVOKE_BODY_BYTES} bytes`);
    try {
      request.body = JSON.parse(options.data);
    } catch (cause) {
      throw new UsageError(`--data is not valid JSON (${(cause as Error).message}): ${JSON.stringify(options.data.slice(0, 60))}`, {
        hint: `quote it for the shell, e.g. --data '{"name":"Ada"}'`,
        cause,
      });
    }
  } else if (request.method === 'GET' || request.method === 'HEAD') {
    delete request.body;
  }
  return request;
}

export function formatTestResult(result: TestResult, paint: Painter): string[] {
  const kind = statusKind(result.status_code);
  const status = statusCell(result.status_code);
  const lines = [
    `Status:   ${kind === 'success' ? paint.green(status) : kind === 'error' ? paint.red(status) : paint.yellow(status)}`,
    `Duration: ${result.execution_time_ms}ms`,
    `Log:      ${result.log_id}`,
  ];
  if (result.error_message) lines.push(`Error:    ${oneLine(result.error_message)}`);
  lines.push('');
  if (result.body === undefined || result.body === null || result.body === '') lines.push(paint.dim('(empty body)'));
  else if (typeof result.body === 'string') lines.push(printable(result.body));
  else lines.push(JSON.stringify(result.body, null, 2));
  return lines;
}

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const request = buildTestRequest({ data: stringOption(ctx, 'data'), method: stringOption(ctx, 'method'), path: stringOption(ctx, 'path') });
  // The platform's longest time limit plus a margin: the server ends the run, not the CLI.
  const client = await ctx.client((MAX_TIMEOUT_SECONDS + 30) * 1000);
  const result = await client.testFunction(ref, request);
  if (ctx.output === 'json') printJson(ctx, result);
  else printLines(ctx, formatTestResult(result, createPainter(ctx.color)));
  return result.status_code >= 500 ? 1 : 0;
}
