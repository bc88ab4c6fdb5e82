import { ValidationError } from './errors.ts';

// Which Kubernetes namespaces may hold Functions: what the gateway (for every
// management call, admin token included) and the operator (for Functions
// applied with kubectl) both decide, from the same two settings (the chart's
// functions.namespaces and functions.namespaceSelector). kube-system and the
// platform's own namespace never hold functions, whatever the settings say: a
// function pod there would sit beside the control plane or the platform's
// Secrets. Pure: the callers fetch a namespace's labels when `needsLabels`.

export const NAMESPACES_VARIABLE = 'FNHOST_FUNCTION_NAMESPACES';
export const SELECTOR_VARIABLE = 'FNHOST_FUNCTION_NAMESPACE_SELECTOR';
export const PLATFORM_NAMESPACE_VARIABLE = 'FNHOST_PLATFORM_NAMESPACE';

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const MAX_SELECTOR_CHARS = 1024;
const MAX_NAMES = 1000;

/** One requirement of a label selector, as Kubernetes writes them. */
export type LabelRequirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | 'doesnotexist' };

export interface FunctionNamespaces {
  /** Namespaces named as allowed; with no selector either, every namespace (but `never`) is. */
  names: string[];
  /** A namespace whose labels match is allowed too. */
  selector: LabelRequirement[] | undefined;
  /** The selector as written, for messages. */
  selectorText: string;
  /** Never allowed: kube-system and the platform's namespace. */
  never: string[];
}

export type NamespaceVerdict = { allowed: true } | { allowed: false; reason: string };

/** Parses `a=b,c!=d,e,!f,g in (h,i),j notin (k)`; throws ValidationError naming `setting`. */
export function parseLabelSelector(text: string, setting: string): LabelRequirement[] {
  if (text.length > MAX_SELECTOR_CHARS) throw new ValidationError(`${setting} is longer than ${MAX_SELECTOR_CHARS} characters`);
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  const bad = (part: string, why: string) => new ValidationError(`${setting}: "${part.trim().slice(0, 80)}" ${why}`);
  const key = (k: string, part: string) => {
    if (!LABEL_KEY.test(k) || k.length > 317) throw bad(part, `has an invalid label key "${k.slice(0, 80)}"`);
    return k;
  };
  const value = (v: string, part: string) => {
    if (!LABEL_VALUE.test(v) || v.length > 63) throw bad(part, `has an invalid label value "${v.slice(0, 80)}"`);
    return v;
  };
  const out: LabelRequirement[] = [];
  for (const raw of parts) {
    const part = raw.trim();
    if (part === '') {
      if (parts.length === 1) break;
      throw bad(raw, 'is an empty requirement');
    }
    let m: RegExpExecArray | null;
    if ((m = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(part)) !== null) {
      const values = m[3]!.split(',').map((v) => value(v.trim(), part));
      out.push({ key: key(m[1]!, part), op: m[2] as 'in' | 'notin', values });
    } else if ((m = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part)) !== null) {
      out.push({ key: key(m[1]!, part), op: m[2] === '!=' ? 'notin' : 'in', values: [value(m[3]!, part)] });
    } else if ((m = /^!\s*(\S+)$/.exec(part)) !== null) {
      out.push({ key: key(m[1]!, part), op: 'doesnotexist' });
    } else if (/^\S+$/.test(part)) {
      out.push({ key: key(part, part), op: 'exists' });
    } else {
      throw bad(part, 'is not a label requirement (key=value, key!=value, key, !key, key in (a,b), key notin (a,b))');
    }
  }
  return out;
}

export function matchesSelector(requirements: readonly LabelRequirement[], labels: Readonly<Record<string, string>>): boolean {
  return requirements.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    switch (r.op) {
      case 'exists':
        return has;
      case 'doesnotexist':
        return !has;
      case 'in':
        return has && r.values.includes(labels[r.key]!);
      case 'notin':
        return !has || !r.values.includes(labels[r.key]!);
    }
  });
}

/** From the settings' text (environment variables); throws ValidationError naming the variable. */
export function parseFunctionNamespaces(input: { names?: string; selector?: string; platformNamespace?: string }): FunctionNamespaces {
  const names = (input.names ?? '').split(',').map((n) => n.trim()).filter((n) => n !== '');
  if (names.length > MAX_NAMES) throw new ValidationError(`${NAMESPACES_VARIABLE} names more than ${MAX_NAMES} namespaces`);
  for (const n of names) {
    if (n.length > 63 || !LABEL.test(n)) throw new ValidationError(`${NAMESPACES_VARIABLE}: "${n.slice(0, 80)}" is not a namespace name (a DNS-1123 label)`);
  }
  const selectorText = (input.selector ?? '').trim();
  const selector = selectorText === '' ? undefined : parseLabelSelector(selectorText, SELECTOR_VARIABLE);
  const never = ['kube-system'];
  const platform = input.platformNamespace?.trim();
  if (platform !== undefined && platform !== '' && platform !== 'kube-system') never.push(platform);
  return { names: [...new Set(names)], selector: selector?.length === 0 ? undefined : selector, selectorText, never };
}

/** Whether deciding on `namespace` needs its labels (only a selector looks at them). */
export function needsLabels(rule: FunctionNamespaces, namespace: string): boolean {
  return rule.selector !== undefined && !rule.never.includes(namespace) && !rule.names.includes(namespace);
}

/** What the settings say, in the words of the chart and the environment, for refusals. */
export function describeSettings(rule: FunctionNamespaces): string {
  const parts: string[] = [];
  if (rule.names.length > 0) parts.push(`functions.namespaces (${NAMESPACES_VARIABLE}) is [${rule.names.join(', ')}]`);
  if (rule.selector !== undefined) parts.push(`functions.namespaceSelector (${SELECTOR_VARIABLE}) is "${rule.selectorText}"`);
  return parts.length === 0 ? 'every namespace but those is allowed' : parts.join(' and ');
}

/**
 * The decision. `labels` is the namespace's labels when `needsLabels` said so
 * (undefined there: the namespace does not exist, which is refused).
 */
export function namespaceVerdict(rule: FunctionNamespaces, namespace: string, labels?: Readonly<Record<string, string>>): NamespaceVerdict {
  if (rule.never.includes(namespace)) {
    return { allowed: false, reason: `namespace "${namespace}" may never hold functions: ${rule.never.map((n) => `"${n}"`).join(' and ')} (kube-system and the platform's own namespace) never do, whatever functions.namespaces says` };
  }
  if (rule.names.length === 0 && rule.selector === undefined) return { allowed: true };
  if (rule.names.includes(namespace)) return { allowed: true };
  if (rule.selector !== undefined && labels !== undefined && matchesSelector(rule.selector, labels)) return { allowed: true };
  const missing = rule.selector !== undefined && labels === undefined ? ' (it does not exist, so it has no labels)' : '';
  return { allowed: false, reason: `namespace "${namespace}" is not one where functions may live${missing}: ${describeSettings(rule)}` };
}
