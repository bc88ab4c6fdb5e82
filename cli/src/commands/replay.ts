import { MAX_TIMEOUT_SECONDS } from '@fnhost/core/limits.ts';
import type { ApiRecordedExchange, ApiReplayResult } from '../api/types.ts';
import { formatChanges } from '@fnhost/core/replay-diff.ts';
import { validateCode } from '@fnhost/core/validation.ts';
import { createPainter, type Painter } from '../format/color.ts';
import { statusCell } from '../format/logs-table.ts';
import { oneLine, printable } from '../format/text.ts';
import { asUsage, functionRef, printJson, printLines, stringOption } from './common.ts';
import { confirmOrRefuse } from './confirm.ts';
import { existingFile } from './settings.ts';
import type { CommandContext } from './spec.ts';

// function:replay sends a record's stored request to the function again (its
// deployed code, or once a module given with --code as a throwaway version)
// and prints how the new answer differs from the recorded one (docs/replay.md).
// It runs the function for real, so it asks first, as function:delete does.

/** `POST /pay?q=7`: the recorded request on one line. */
export function describeRequest(exchange: ApiRecordedExchange): string {
  const { method, path, query } = exchange.request;
  return oneLine(`${method} ${path}${query === '' ? '' : `?${query}`}`);
}

export function formatReplay(name: string, result: ApiReplayResult, paint: Painter): string[] {
  const target = result.code === 'current' ? `the deployed code of ${name}` : `a throwaway version of ${name} (not deployed)`;
  const lines = [
    `Replayed ${result.replayed_from} against ${target}: new record ${result.log_id} (trigger replay, ${result.execution_time_ms}ms)`,
    `Status:   recorded ${result.recorded === null ? '-' : statusCell(result.recorded.status)}, now ${statusCell(result.replayed.status)}`,
  ];
  if (result.error_message) lines.push(`Error:    ${oneLine(result.error_message)}`);
  lines.push('');
  if (result.changes === null) {
    lines.push(paint.dim('The record kept no response (the platform answered instead), so there is nothing to compare.'));
    return lines;
  }
  for (const line of formatChanges(result.changes)) {
    const text = printable(line);
    lines.push(line.startsWith('  - ') ? paint.red(text) : line.startsWith('  + ') ? paint.green(text) : text);
  }
  return lines;
}

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const logId = ctx.args[1]!;
  const codeFile = stringOption(ctx, 'code');
  let code: string | undefined;
  if (codeFile !== undefined) {
    const path = await existingFile(ctx, codeFile, '--code');
    const { bundleHandler } = await import('../bundle/bundle.ts');
    const bundle = await bundleHandler(path, ctx.io.cwd);
    for (const warning of bundle.warnings) ctx.io.stderr.write(`warning: ${warning}\n`);
    code = asUsage(() => validateCode(bundle.code), `--code ${codeFile}`);
  }
  // The platform's longest time limit plus a margin (and a throwaway runtime's start): the server ends the run.
  const client = await ctx.client((MAX_TIMEOUT_SECONDS + 60) * 1000);
  const fn = await client.getFunction(ref);
  // Fails early, before the question, on an unknown log or a record without its request.
  const exchange = await client.recordedRequest(fn.function_id, logId);
  const target = code === undefined ? `the deployed code of ${fn.name}` : `${codeFile} as a throwaway version of ${fn.name}`;
  await confirmOrRefuse(ctx, {
    question: `Replay ${describeRequest(exchange)} (${logId}, recorded ${exchange.executed_at}) against ${target}? It runs for real (KV writes, outbound calls).`,
    refusal: 'refusing to replay without confirmation: stdin is not a terminal, and a replay runs the function for real',
    hint: 'pass --yes to replay without asking',
    cancelled: 'not replayed: nothing ran',
  });
  const result = await client.replay(fn.function_id, logId, code, (MAX_TIMEOUT_SECONDS + 60) * 1000);
  if (ctx.output === 'json') printJson(ctx, result);
  else printLines(ctx, formatReplay(fn.name, result, createPainter(ctx.color)));
  return result.replayed.status >= 500 ? 1 : 0;
}
