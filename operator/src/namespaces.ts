import { namespaceVerdict, needsLabels, type FunctionNamespaces } from '@fnhost/core/function-namespaces.ts';
import type { SpecProblem } from './validate.ts';

// A Function applied with kubectl into a namespace where functions may not
// live (core/function-namespaces.ts, the same rule the gateway applies to
// every management call) is refused: Ready=False, reason NamespaceNotAllowed,
// and nothing is made for it. The namespace's labels are read only when a
// selector decides; a label change is seen at the Function's next reconcile.

export const NAMESPACE_NOT_ALLOWED = 'NamespaceNotAllowed';

export async function namespaceProblem(
  rule: FunctionNamespaces,
  namespace: string,
  labelsOf: (namespace: string) => Promise<Record<string, string> | undefined>,
): Promise<SpecProblem | null> {
  const labels = needsLabels(rule, namespace) ? await labelsOf(namespace) : undefined;
  const verdict = namespaceVerdict(rule, namespace, labels);
  return verdict.allowed ? null : { reason: NAMESPACE_NOT_ALLOWED, message: `${verdict.reason}; nothing is run for this Function` };
}
