import { readFileSync } from 'node:fs';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError } from './errors.ts';
import { COMMANDS, findCommand, optionsOf, suggestCommand } from './commands/registry.ts';
import { parseCommandLine } from './commands/parse.ts';
import type { CommandContext, Terminal } from './commands/spec.ts';
import { colorEnabled } from './format/color.ts';
import { commandHelp, mainHelp } from './format/help.ts';

// The entry: pick the command, parse its flags, load only its module, run it,
// and turn every failure into `error: ...` (+ `hint: ...`) and an exit code.
// Ink, the HTTP client and cron-parser load only inside the commands that use them.

export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export function processTerminal(): Terminal {
  // `fnhost ... | head -1`: the reader left, which is not an error of ours.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, cwd: process.cwd() };
}

export async function main(argv: string[], io: Terminal = processTerminal()): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (err) {
    return report(err, io);
  }
}

async function dispatch(argv: string[], io: Terminal): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h') {
    io.stdout.write(mainHelp(COMMANDS, version()));
    return EXIT_OK;
  }
  if (first === '--version' || first === '-v') {
    io.stdout.write(`fnhost ${version()}\n`);
    return EXIT_OK;
  }
  if (first === 'help') {
    const topic = rest[0];
    if (topic === undefined) {
      io.stdout.write(mainHelp(COMMANDS, version()));
      return EXIT_OK;
    }
    const spec = findCommand(topic) ?? unknownCommand(topic);
    io.stdout.write(commandHelp(spec, optionsOf(spec)));
    return EXIT_OK;
  }
  if (first.startsWith('-')) {
    throw new UsageError(`unknown flag "${first}"; flags come after the command`, { hint: 'run fnhost --help to see the commands' });
  }
  const spec = findCommand(first) ?? unknownCommand(first);
  const parsed = parseCommandLine(spec, rest);
  if (parsed.help) {
    io.stdout.write(commandHelp(spec, optionsOf(spec)));
    return EXIT_OK;
  }
  const module = await spec.load();
  let client: Promise<import('./api/client.ts').ApiClient> | undefined;
  const ctx: CommandContext = {
    spec,
    args: parsed.args,
    options: parsed.options,
    output: parsed.output,
    io,
    color: colorEnabled(io.env, io.stdout.isTTY === true),
    client(timeoutMs) {
      client ??= (async () => {
        const [{ resolveConnection }, { describeNamespaceSource }, { ApiClient }] = await Promise.all([
          import('./config/connection.ts'),
          import('./config/namespace.ts'),
          import('./api/client.ts'),
        ]);
        const connection = await resolveConnection({
          flags: { url: parsed.options.url as string | undefined, token: parsed.options.token as string | undefined, namespace: parsed.options.namespace as string | undefined },
          env: io.env,
          cwd: io.cwd,
          // Asked only when no namespace is named and a kubeconfig exists: the kube context counts in cluster mode only.
          gatewayMode: async (server) => (await new ApiClient({ url: server.url, token: server.token, tokenSource: server.tokenDescription ?? server.tokenSource }).serverInfo()).mode,
        });
        const namespaceSource = describeNamespaceSource(connection.namespaceSource);
        if (debugEnabled(io.env)) {
          io.stderr.write(
            `debug: server ${connection.url} (from ${connection.urlSource}), token from ${connection.tokenDescription ?? connection.tokenSource ?? 'nowhere'}, ` +
              `namespace ${connection.namespace ?? '(none sent)'} (from ${namespaceSource})\n`,
          );
        }
        return new ApiClient({ url: connection.url, urlSource: connection.urlSource, token: connection.token, tokenSource: connection.tokenDescription ?? connection.tokenSource, timeoutMs, namespace: connection.namespace, namespaceSource });
      })();
      return client;
    },
  };
  return (await module.run(ctx)) ?? EXIT_OK;
}

function unknownCommand(name: string): never {
  const suggestion = suggestCommand(name);
  throw new UsageError(`unknown command "${name}"`, {
    hint: suggestion ? `did you mean fnhost ${suggestion}? (fnhost --help lists the commands)` : 'run fnhost --help to see the commands',
  });
}

function report(err: unknown, io: Terminal): number {
  const color = colorEnabled(io.env, io.stderr.isTTY === true);
  const label = color ? '\u001b[31merror:\u001b[39m' : 'error:';
  const debug = debugEnabled(io.env);
  if (err instanceof CliError) {
    io.stderr.write(`${label} ${err.message}\n`);
    if (err.hint) io.stderr.write(`hint: ${err.hint}\n`);
    if (debug) io.stderr.write(stackOf(err));
    return err.exitCode;
  }
  const message = err instanceof Error ? err.message : String(err);
  // core's ValidationError: a value the shared rules reject is a usage error.
  if (err instanceof Error && (err as { code?: unknown }).code === 'invalid_argument') {
    io.stderr.write(`${label} ${message}\n`);
    if (debug) io.stderr.write(stackOf(err));
    return EXIT_USAGE;
  }
  io.stderr.write(`${label} unexpected failure: ${message}\n`);
  io.stderr.write(debug ? stackOf(err) : 'hint: set FNHOST_DEBUG=1 to see the stack trace\n');
  return EXIT_FAILURE;
}

/** FNHOST_DEBUG=1: stack traces, and one `debug:` line on stderr saying where the server, token and namespace came from. */
export function debugEnabled(env: Record<string, string | undefined>): boolean {
  return env.FNHOST_DEBUG === '1' || env.FNHOST_DEBUG === 'true';
}

function stackOf(err: unknown): string {
  let text = '';
  let current: unknown = err;
  for (let depth = 0; current !== undefined && depth < 5; depth++) {
    text += (depth === 0 ? '' : 'caused by: ') + (current instanceof Error ? (current.stack ?? current.message) : String(current)) + '\n';
    current = current instanceof Error ? current.cause : undefined;
  }
  return text;
}
