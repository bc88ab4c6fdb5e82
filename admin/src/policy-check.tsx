import { useEffect, useId, useState, type FormEvent } from 'react';
import { api, type ApiFunction, type PolicyCheck } from './api.ts';

// Beside the policy editor: "may this function connect to host:port now, and why?", the same
// answer as `fnhost policy:check` (the egress proxy's dry run through the management API): the
// rule, the scope, and each address the name resolves to with its own decision.

export function ConnectionCheck(props: { functions: ApiFunction[]; scope: string; version: number }) {
  const id = useId();
  const [fn, setFn] = useState(props.scope !== 'global' ? props.scope : (props.functions[0]?.function_id ?? ''));
  const [target, setTarget] = useState('');
  const [answer, setAnswer] = useState<PolicyCheck | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The editor's scope names a function: check that one.
  useEffect(() => {
    if (props.scope !== 'global') setFn(props.scope);
  }, [props.scope]);
  // A saved change makes the last answer stale.
  useEffect(() => setAnswer(null), [props.version]);

  const check = async (e: FormEvent) => {
    e.preventDefault();
    if (fn === '' || target.trim() === '') return;
    setBusy(true);
    setError(null);
    try {
      setAnswer(await api.checkConnection(fn, target.trim()));
    } catch (err) {
      setAnswer(null);
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>Check a connection</h2>
      {props.functions.length === 0 ? (
        <p className="muted">No function to check yet.</p>
      ) : (
        <form className="toolbar" onSubmit={(e) => void check(e)}>
          <label htmlFor={`${id}-fn`}>Function</label>
          <select id={`${id}-fn`} value={fn} onChange={(e) => setFn(e.target.value)}>
            {props.functions.map((f) => (
              <option key={f.function_id} value={f.function_id}>
                {f.name}
              </option>
            ))}
          </select>
          <label htmlFor={`${id}-target`}>Host and port</label>
          <input id={`${id}-target`} value={target} onChange={(e) => setTarget(e.target.value)} placeholder="api.example.com:443, 127.0.0.1:3000" spellCheck={false} autoCapitalize="off" />
          <button type="submit" disabled={busy || target.trim() === ''}>
            Check
          </button>
        </form>
      )}
      {error !== null && (
        <p role="alert" className="error-box">
          {error}
        </p>
      )}
      {answer !== null && (
        <div role="status" aria-label="Connection check answer" className={answer.allowed ? 'ok-box' : 'error-box'}>
          <p>
            <strong>{answer.allowed ? 'Allowed' : 'Denied'}</strong>: {answer.message}
          </p>
          <p>
            Rule <code>{answer.rule}</code> ({answer.scope} policy)
          </p>
          {answer.addresses.length > 0 && (
            <ul aria-label="Addresses">
              {answer.addresses.map((a) => (
                <li key={a.address}>
                  <code>{a.address}</code>: {a.allowed ? 'allowed' : 'denied'} ({a.scope} rule <code>{a.rule}</code>)
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}
