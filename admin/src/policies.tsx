import { useEffect, useId, useState, type FormEvent } from 'react';
import { hostPatternProblem, validateHostPattern } from '@fnhost/core/netpattern.ts';
import type { NetworkPolicy } from '@fnhost/core/model.ts';
import { api, ApiError, type ApiFunction, type PolicyChange } from './api.ts';
import { ConnectionCheck } from './policy-check.tsx';
import { confirmLeave, useUnsavedChanges } from './navigation.ts';
import { formatTime } from './time.ts';
import { ClampedText, ConfirmButton } from './widgets.tsx';

// Network policies: the global policy and per-function overrides, each a
// default (allow/deny) with allow and deny host patterns. Patterns are
// checked as you type with the very module the gateway's rules are written
// in (core/src/netpattern.ts), and again by the gateway on save.

const EMPTY: NetworkPolicy = { default: 'allow', allow: [], deny: [] };

function PatternList(props: { kind: 'allow' | 'deny'; patterns: string[]; onChange: (next: string[]) => void }) {
  const [draft, setDraft] = useState('');
  const id = useId();
  const problem = draft.trim() === '' ? null : hostPatternProblem(draft);
  const duplicate = problem === null && draft.trim() !== '' && props.patterns.includes(validateHostPattern(draft));
  const add = (e: FormEvent) => {
    e.preventDefault();
    if (draft.trim() === '' || problem !== null || duplicate) return;
    props.onChange([...props.patterns, validateHostPattern(draft)]);
    setDraft('');
  };
  const title = props.kind === 'allow' ? 'Allowed hosts' : 'Denied hosts';
  return (
    <fieldset className="patterns">
      <legend>{title}</legend>
      {props.patterns.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <ul aria-label={title}>
          {props.patterns.map((p) => (
            <li key={p}>
              <code>{p}</code>
              <button type="button" className="link" aria-label={`Remove ${p} from ${props.kind} list`} onClick={() => props.onChange(props.patterns.filter((x) => x !== p))}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <form className="add-pattern" onSubmit={add}>
        <label htmlFor={`${id}-in`}>Add {props.kind} pattern</label>
        <div className="row">
          <input
            id={`${id}-in`}
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
            placeholder="example.com, *.example.com, 10.0.0.0/8, 127.0.0.1:3000"
            spellCheck={false}
            autoCapitalize="off"
            aria-invalid={problem !== null || duplicate}
            aria-describedby={`${id}-msg`}
          />
          <button type="submit" disabled={draft.trim() === '' || problem !== null || duplicate}>
            Add
          </button>
        </div>
        <p id={`${id}-msg`} className={problem || duplicate ? 'field-error' : 'hint'} aria-live="polite">
          {problem ?? (duplicate ? 'That pattern is already in the list.' : 'A host, a *.wildcard, an IP or a CIDR.')}
        </p>
      </form>
    </fieldset>
  );
}

function ScopeLabel(props: { scope: string; names: Map<string, string> }) {
  if (props.scope === 'global') return <>global</>;
  return <>function {props.names.get(props.scope) ?? props.scope}</>;
}

/**
 * One side of a recorded change. No policy before means none had been set (the scope's first),
 * no policy after means it was removed; what applied instead differs by scope.
 */
export function policyText(p: NetworkPolicy | null, side: 'before' | 'after', scope: string): string {
  if (p === null) {
    if (scope === 'global') return side === 'before' ? 'none set yet (the built-in default: allow)' : 'removed (the built-in default: allow)';
    return side === 'before' ? 'no own policy (the global one applied)' : 'removed (the global policy applies)';
  }
  return `default ${p.default}; allow [${p.allow.join(', ')}]; deny [${p.deny.join(', ')}]`;
}

export function PoliciesPage() {
  const [fns, setFns] = useState<ApiFunction[]>([]);
  const [all, setAll] = useState<{ global: NetworkPolicy; functions: Record<string, NetworkPolicy> } | null>(null);
  const [changes, setChanges] = useState<PolicyChange[]>([]);
  const [scope, setScope] = useState('global');
  const [draft, setDraft] = useState<NetworkPolicy>(EMPTY);
  const [dirty, setDirty] = useState(false);
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const [version, setVersion] = useState(0);

  useEffect(() => {
    void Promise.all([api.functions(), api.policies(), api.changes(50)]).then(
      ([f, p, c]) => {
        setFns(f);
        setAll(p);
        setChanges(c);
      },
      (err) => setMessage({ kind: 'error', text: err instanceof Error ? err.message : String(err) }),
    );
  }, [version]);

  const stored = all === null ? null : scope === 'global' ? all.global : (all.functions[scope] ?? null);
  useEffect(() => {
    if (all === null) return;
    setDraft(stored ?? { ...EMPTY, default: all.global.default });
    setDirty(false);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [all, scope]);

  const names = new Map(fns.map((f) => [f.function_id, f.name]));
  useUnsavedChanges(dirty ? 'The policy has unsaved changes. Leave and lose them?' : null);
  const change = (next: NetworkPolicy) => {
    setDraft(next);
    setDirty(true);
    setMessage(null);
  };

  const save = async () => {
    try {
      if (scope === 'global') await api.putGlobal(draft);
      else await api.putFunction(scope, draft);
      setMessage({ kind: 'ok', text: `Saved the ${scope === 'global' ? 'global policy' : `policy of ${names.get(scope)}`}. It applies from the next outbound fetch.` });
      setVersion((v) => v + 1);
    } catch (err) {
      setMessage({ kind: 'error', text: err instanceof ApiError ? `${err.message} (${err.code})` : String(err) });
    }
  };

  const removeOverride = async () => {
    try {
      await api.deleteFunction(scope);
      setMessage({ kind: 'ok', text: `Removed the policy of ${names.get(scope)}; the global policy applies to it.` });
      setVersion((v) => v + 1);
    } catch (err) {
      setMessage({ kind: 'error', text: err instanceof Error ? err.message : String(err) });
    }
  };

  return (
    <>
      <h1>Network policies</h1>
      <p className="lede">
        Every outbound connection of a function is checked against these rules by the egress proxy. A function's deny and allow patterns come first, then the global ones; then this machine, link-local and metadata addresses are refused unless an allow names the address; then the function's default, then the global default. Allowing a name allows the addresses it resolves to, unless a deny rule names one.
      </p>
      {message && (
        <p role={message.kind === 'error' ? 'alert' : 'status'} className={message.kind === 'error' ? 'error-box' : 'ok-box'}>
          <ClampedText text={message.text} />
        </p>
      )}
      {all === null ? (
        <p role="status">Loading…</p>
      ) : (
        <section className="card" aria-labelledby="edit-h">
          <h2 id="edit-h">Edit a policy</h2>
          <div className="toolbar">
            <label htmlFor="scope">Scope</label>
            <select
              id="scope"
              value={scope}
              onChange={(e) => {
                // Another scope loads its own policy: unsaved edits of this one would be lost.
                if (confirmLeave()) setScope(e.target.value);
              }}
            >
              <option value="global">Global (all functions)</option>
              {fns.map((f) => (
                <option key={f.function_id} value={f.function_id}>
                  Function {f.name}
                  {all.functions[f.function_id] ? ' (own policy)' : ''}
                </option>
              ))}
            </select>
          </div>
          {scope !== 'global' && stored === null && <p className="hint">This function has no policy of its own yet; saving creates one.</p>}
          <fieldset className="default">
            <legend>Default for hosts no pattern names</legend>
            {(['allow', 'deny'] as const).map((d) => (
              <label key={d} className="radio">
                <input type="radio" name="default" value={d} checked={draft.default === d} onChange={() => change({ ...draft, default: d })} /> {d}
              </label>
            ))}
          </fieldset>
          <div className="lists">
            <PatternList kind="deny" patterns={draft.deny} onChange={(deny) => change({ ...draft, deny })} />
            <PatternList kind="allow" patterns={draft.allow} onChange={(allow) => change({ ...draft, allow })} />
          </div>
          <div className="actions">
            <button type="button" onClick={() => void save()} disabled={!dirty}>
              Save policy
            </button>
            {scope !== 'global' && stored !== null && (
              <ConfirmButton
                label="Remove function policy"
                question={<>Remove the policy of {names.get(scope) ?? scope}? The global policy will apply to it from its next outbound fetch.</>}
                confirmLabel="Yes, remove it"
                onConfirm={() => void removeOverride()}
              />
            )}
            {dirty && <span className="muted">Unsaved changes</span>}
          </div>
        </section>
      )}
      {all !== null && <ConnectionCheck functions={fns} scope={scope} version={version} />}
      <section className="card" aria-labelledby="changes-h">
        <h2 id="changes-h">Recent changes</h2>
        {changes.length === 0 ? (
          <p>No changes recorded yet.</p>
        ) : (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Policy changes table">
            <table className="changes">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Who</th>
                  <th scope="col">Scope</th>
                  <th scope="col">Before</th>
                  <th scope="col">After</th>
                </tr>
              </thead>
              <tbody>
                {changes.map((c) => (
                  <tr key={c.id}>
                    <td>{formatTime(c.at)}</td>
                    <td>{c.actor}</td>
                    <td>
                      <ScopeLabel scope={c.scope} names={names} />
                    </td>
                    <td>{policyText(c.before, 'before', c.scope)}</td>
                    <td>{policyText(c.after, 'after', c.scope)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
