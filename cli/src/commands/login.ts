import { homedir } from 'node:os';
import { Writable } from 'node:stream';
import { ApiClient } from '../api/client.ts';
import { ApiAuthError } from '../api/errors.ts';
import { normaliseUrl } from '../config/connection.ts';
import { kubeconfigPaths, readKubeconfigFiles } from '../config/kubeconfig.ts';
import { kubeCredential } from '../config/kube-credentials.ts';
import { writeLogin } from '../config/login-file.ts';
import { describeNamespaceSource, resolveNamespace, type ResolvedNamespace } from '../config/namespace.ts';
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

/** The line login adds against a cluster: the namespace later commands will use, and from where. */
export function namespaceLine(resolved: ResolvedNamespace, gatewayDefault: string | undefined): string {
  const { namespace, source } = resolved;
  switch (source.kind) {
    case 'flag':
    case 'env':
      return `Namespace: ${namespace} (from ${describeNamespaceSource(source)}; saved with the login)`;
    case 'kube-context':
      return `Namespace: ${namespace} (from ${describeNamespaceSource(source)}; not saved: each command reads the current kube context)`;
    default:
      return `Namespace: ${namespace ?? gatewayDefault ?? 'default'} (${describeNamespaceSource(source)}; pass --namespace to save another)`;
  }
}

/**
 * The token being checked is the one login was given: "run fnhost login", the
 * hint every other command gives for a rejected token, would send the user in a circle.
 */
async function refusedTokenSaysSo<T>(url: string, call: () => Promise<T>, kube = false): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof ApiAuthError) || err.code === 'forbidden') throw err;
    const said = err.code === undefined ? `HTTP ${err.status}` : `${err.status} ${err.code}`;
    throw new ApiAuthError(`the gateway at ${url} refused the token (${said}); nothing was saved`, {
      url,
      status: err.status,
      code: err.code,
      cause: err,
      hint: kube
        ? 'this gateway does not take Kubernetes tokens (the chart\'s rbac.kubernetesTokens), or the API server did not accept the kube context\'s token (kubectl auth whoami)'
        : "check the token: the gateway's admin token (on one machine its FNHOST_TOKEN, else FNHOST_DATA_DIR/token, ./.fnhost/token by default)",
    });
  }
}

export async function run(ctx: CommandContext): Promise<number> {
  const rawUrl = stringOption(ctx, 'url') ?? ctx.io.env.FNHOST_URL ?? LOCAL_DEFAULT_URL;
  const urlSource = stringOption(ctx, 'url') !== undefined ? '--url' : ctx.io.env.FNHOST_URL ? 'FNHOST_URL' : 'the local default';
  const url = normaliseUrl(rawUrl, urlSource === 'the local default' ? 'URL' : urlSource);
  const kube = ctx.options.kube === true;
  if (kube && stringOption(ctx, 'token') !== undefined) throw new UsageError('--kube and --token exclude each other: --kube presents the kube context\'s credential instead of a token');
  // --kube: the kube context's credential now, and at each later command (nothing secret is saved).
  const credential = kube ? await kubeCredential(ctx.io.env, ctx.io.cwd) : undefined;
  const token = credential?.token ?? (stringOption(ctx, 'token') ?? ctx.io.env.FNHOST_TOKEN ?? (await readTokenFromStdin(ctx))).trim();
  if (token === '') throw new UsageError('login needs a token: pass --token, set FNHOST_TOKEN, or give it on stdin (or --kube for the kube context\'s credentials)');
  const tokenSource = credential?.source ?? 'login';
  // The gateway's mode decides whether the kube context counts (and this first request checks the token).
  const info = await refusedTokenSaysSo(url, () => new ApiClient({ url, urlSource, token, tokenSource }).serverInfo(), kube);
  // Only a namespace named here (--namespace, FNHOST_NAMESPACE) is saved; the kube context's is read again by each command.
  const resolved = await resolveNamespace({
    flag: stringOption(ctx, 'namespace'),
    env: ctx.io.env,
    kubeconfig: () => readKubeconfigFiles(kubeconfigPaths(ctx.io.env, homedir(), ctx.io.cwd)),
    gatewayMode: async () => info.mode,
  });
  const { namespace } = resolved;
  const saved = resolved.source.kind === 'flag' || resolved.source.kind === 'env' ? namespace : undefined;
  // Verified before it is saved, so a typo is caught now rather than at the next command
  // (with a namespace: that the server knows it, through a listing in it). A Kubernetes
  // identity may lack the right to list there: that is RBAC's answer, said, not a failed login.
  let listing = '';
  try {
    await refusedTokenSaysSo(url, () => new ApiClient({ url, urlSource, token, tokenSource, namespace }).listFunctions(), kube);
  } catch (err) {
    if (!(kube && err instanceof ApiAuthError && err.code === 'forbidden')) throw err;
    listing = `Note: RBAC does not let you list functions in namespace ${namespace ?? info.default_namespace ?? 'default'} (${err.message})`;
  }
  const path = loginFilePath(ctx.io.env);
  const ns = saved === undefined ? {} : { namespace: saved };
  await writeLogin(path, kube ? { url, kube: true, ...ns } : { url, token, ...ns });
  const lines = [`${createPainter(ctx.color).green('✓')} Logged in to ${url}${saved === undefined ? '' : ` (namespace ${saved})`}${kube ? ` with ${credential!.source}; each command presents it again` : ''}; saved to ${path}`];
  if (listing !== '') lines.push(listing);
  if (info.mode === 'cluster') lines.push(namespaceLine(resolved, info.default_namespace));
  printLines(ctx, lines);
  return 0;
}
