import { useState, type FormEvent } from 'react';
import { ApiError, signIn, type SessionInfo } from './api.ts';

// Sign-in with the admin token. The token is sent once, in the body of a
// same-origin POST, and kept nowhere in the page (the field is cleared).

export function SignInPage(props: { notice: string | null; onSignedIn: (s: SessionInfo) => void }) {
  const [token, setToken] = useState('');
  const [refused, setRefused] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await signIn(token);
      setToken('');
      props.onSignedIn(s);
    } catch (err) {
      setToken('');
      if (err instanceof ApiError && err.status === 401) setRefused(true);
      else setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  if (refused)
    return (
      <main id="main" className="narrow">
        <h1>Wrong admin token</h1>
        <p role="alert" className="error-box">
          The gateway refused that token. Nothing was signed in.
        </p>
        <p>
          The admin token is the <code>FNHOST_TOKEN</code> the gateway was started with, or the contents of the <code>token</code> file in its data directory (<code>.fnhost/token</code> by default).
        </p>
        <button type="button" autoFocus onClick={() => setRefused(false)}>
          Try again
        </button>
      </main>
    );

  return (
    <main id="main" className="narrow">
      <h1>Sign in to fnhost admin</h1>
      {props.notice && (
        <p role="status" className="info-box">
          {props.notice}
        </p>
      )}
      <form onSubmit={(e) => void submit(e)}>
        <label htmlFor="token">Admin token</label>
        <input id="token" name="token" type="password" autoComplete="off" spellCheck={false} required value={token} onChange={(e) => setToken(e.target.value)} autoFocus />
        <button type="submit" disabled={busy || token === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {error && (
        <p role="alert" className="error-box">
          {error}
        </p>
      )}
      <p className="hint">The session ends after 30 minutes without use, after 8 hours in all, or when you sign out.</p>
    </main>
  );
}
