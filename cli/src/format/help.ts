import type { CommandSpec, OptionSpec } from '../commands/spec.ts';

// Help text, in the shape gh and wrangler users know: usage, description,
// flags, examples. Plain text so it reads the same piped.

function flagLabel(name: string, option: OptionSpec): string {
  const short = option.short ? `-${option.short}, ` : '    ';
  return `${short}--${name}${option.type === 'string' ? ` ${option.value ?? '<value>'}` : ''}`;
}

function flagTable(options: Record<string, OptionSpec>): string[] {
  const entries = Object.entries(options).map(([name, option]) => [flagLabel(name, option), option.description] as const);
  const width = Math.max(...entries.map(([label]) => label.length));
  return entries.map(([label, description]) => `  ${label.padEnd(width)}  ${description}`);
}

export function commandHelp(spec: CommandSpec, options: Record<string, OptionSpec>): string {
  const usage = ['fnhost', spec.name, ...spec.args, '[flags]'].join(' ');
  const lines = [spec.summary, '', 'Usage:', `  ${usage}`];
  if (spec.details) lines.push('', ...spec.details);
  if (spec.args.includes('<function>')) lines.push('', '<function> is the function\'s name or its UUID.');
  lines.push('', 'Flags:', ...flagTable(options));
  if (spec.examples.length > 0) lines.push('', 'Examples:', ...spec.examples.map((e) => `  $ ${e}`));
  return lines.join('\n') + '\n';
}

export function mainHelp(commands: readonly CommandSpec[], version: string): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    `fnhost ${version}: manage functions on an fnhost platform`,
    '',
    'Usage:',
    '  fnhost <command> [arguments] [flags]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Flags:',
    '  -h, --help     show help (also: fnhost <command> --help)',
    '  -v, --version  print the version',
    '',
    'Connection (every command): --url and --token, else FNHOST_URL and FNHOST_TOKEN,',
    'else the saved login (fnhost login), else http://127.0.0.1:8080 with ./.fnhost/token.',
    '',
    'Namespace (functions on a cluster): --namespace (-n), else FNHOST_NAMESPACE, else the saved',
    "login's, else the current kube context's (KUBECONFIG or ~/.kube/config; only when the gateway",
    "runs in cluster mode), else the gateway's default. FNHOST_DEBUG=1 prints where it came from.",
    '',
    'Exit codes: 0 ok, 1 failure (server, network, a 5xx test), 2 usage, 3 authentication,',
    '4 not found, 5 cancelled. FNHOST_DEBUG=1 shows stack traces and where the connection came from.',
    '',
  ].join('\n');
}
