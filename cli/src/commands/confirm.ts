import { CancelledError, UsageError } from '../errors.ts';
import type { CommandContext } from './spec.ts';

// The question a command asks before it does something that cannot be taken
// back (delete, replay): skipped with --yes; without a terminal it refuses
// (exit 2) rather than wait on a pipe; anything but y/yes cancels (exit 5).

export interface Confirmation {
  /** Asked on stderr, with ` [y/N] ` after it. */
  question: string;
  /** The UsageError's message without a terminal and without --yes. */
  refusal: string;
  hint: string;
  /** The CancelledError's message on a no. */
  cancelled: string;
}

export async function confirmOrRefuse(ctx: CommandContext, c: Confirmation): Promise<void> {
  if (ctx.options.yes === true) return;
  if (ctx.io.stdin.isTTY !== true) throw new UsageError(c.refusal, { hint: c.hint });
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: ctx.io.stdin, output: ctx.io.stderr });
  let answer: string;
  try {
    answer = await rl.question(`${c.question} [y/N] `);
  } finally {
    rl.close();
  }
  if (!/^y(es)?$/i.test(answer.trim())) throw new CancelledError(c.cancelled);
}
