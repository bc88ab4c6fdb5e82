// The text of a kubeconfig file for the CLI's tests: one cluster and user, the
// contexts given (each with its namespace, if any), and current-context.

export function kubeconfigText(options: { current?: string; contexts?: Array<{ name: string; namespace?: string; cluster?: string }> }): string {
  const lines = ['apiVersion: v1', 'kind: Config', 'clusters:', '- name: c1', '  cluster:', '    server: https://127.0.0.1:6443', 'users:', '- name: u1', '  user:', '    token: t'];
  lines.push('contexts:');
  for (const ctx of options.contexts ?? []) {
    lines.push(`- name: ${ctx.name}`, '  context:', `    cluster: ${ctx.cluster ?? 'c1'}`, '    user: u1');
    if (ctx.namespace !== undefined) lines.push(`    namespace: ${ctx.namespace}`);
  }
  if (options.current !== undefined) lines.push(`current-context: ${options.current}`);
  return lines.join('\n') + '\n';
}
