import { Writable } from 'node:stream';
import { ApiClient } from '../api/client.ts';
import { normaliseUrl, validateNamespace } from '../config/connection.ts';
import { writeLogin } from '../config/login-file.ts';
import { LOCAL_DEFAULT_URL, loginFilePath } from '../config/paths.ts';
import { UsageError } from '../errors.ts';
import { createPainter } from '../format/color.ts';
import { printLines, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

const MAX_TOKEN_BYTES = 4096;

async function readTokenFromStdin(ctx: CommandContext): Promise<string> {
  const stdin = ctx.io.stdin;
  if (stdin.isTTY === true) {
    const { createInterface } = await import('node:readline/promises');
    // Echo goes to a sink so the token does not appear on the screen.
    const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
    const rl = createInterface({ input: stdin, output: sink, terminal: true });
    ctx.io.stderr.write('Token: ');
    try {
      return await rl.question('');
    } finally {
      rl.close();
      ctx.io.stderr.write('\n');
    }
  }
  let text = '';
  for await (const chunk of stdin) {
    text += String(chunk);
    if (text.length > MAX_TOKEN_BYTES) throw new UsageError(`the token on stdin is longer than ${MAX_TOKEN_BYTES} bytes`);
  }
  return text.split('\n')[0] ?? '';
}

export async function run(ctx: CommandContext): Promise<number> {
  const rawUrl = stringOption(ctx, 'url') ?? ctx.io.env.FNHOST_URL ?? LOCAL_DEFAULT_URL;
  const url = normaliseUrl(rawUrl, stringOption(ctx, 'url') !== undefined ? '--url' : ctx.io.env.FNHOST_URL ? 'FNHOST_URL' : 'URL');
  const token = (stringOption(ctx, 'token') ?? ctx.io.env.FNHOST_TOKEN ?? (await readTokenFromStdin(ctx))).trim();
  if (token === '') throw new UsageError('login needs a token: pass --token, set FNHOST_TOKEN, or give it on stdin');
  const rawNamespace = stringOption(ctx, 'namespace') ?? ctx.io.env.FNHOST_NAMESPACE;
  const namespace = rawNamespace === undefined || rawNamespace.trim() === '' ? undefined : validateNamespace(rawNamespace.trim(), stringOption(ctx, 'namespace') !== undefined ? '--namespace' : 'FNHOST_NAMESPACE');
  // Verified before it is saved, so a typo is caught now rather than at the next command
  // (with a namespace: that the server knows it, through a listing in it).
  await new ApiClient({ url, token, tokenSource: 'login', namespace }).listFunctions();
  const path = loginFilePath(ctx.io.env);
  await writeLogin(path, namespace === undefined ? { url, token } : { url, token, namespace });
  printLines(ctx, [`${createPainter(ctx.color).green('✓')} Logged in to ${url}${namespace === undefined ? '' : ` (namespace ${namespace})`}; saved to ${path}`]);
  return 0;
}
