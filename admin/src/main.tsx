import { StrictMode, useCallback, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { NAVIGATED, confirmLeave, type Navigate } from './navigation.ts';
import { api, currentSession, setSessionLostHandler, signOut, type SessionInfo } from './api.ts';
import { FunctionPage, FunctionsPage } from './functions.tsx';
import { PoliciesPage } from './policies.tsx';
import { SignInPage } from './signin.tsx';
import './styles.css';

// The panel's shell: session check, navigation and the page for the current
// path under /admin (history API; the gateway answers every page path with
// index.html).

export type { Navigate };

function currentPath(): string {
  const p = window.location.pathname.replace(/^\/admin/, '');
  return p === '' ? '/' : p;
}

function App() {
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const [path, setPath] = useState(currentPath());
  const [notice, setNotice] = useState<string | null>(null);
  // One machine without a sandbox (docs/sandbox.md): said on every page, as at every start of the gateway.
  const [unsandboxed, setUnsandboxed] = useState<string | null>(null);

  // `to` may carry a query string (a page's filters); the page reads it from the URL.
  const navigate: Navigate = useCallback((to: string) => {
    if (!confirmLeave()) return;
    window.history.pushState(null, '', `/admin${to}`);
    window.dispatchEvent(new Event(NAVIGATED));
    setPath(to.replace(/\?.*$/, ''));
  }, []);

  useEffect(() => {
    // The URL shown: back or forward with unsaved edits the user keeps puts it back.
    let shown = window.location.href;
    const onPop = () => {
      if (!confirmLeave()) {
        window.history.pushState(null, '', shown);
        return;
      }
      shown = window.location.href;
      setPath(currentPath());
    };
    const track = () => {
      shown = window.location.href;
    };
    window.addEventListener(NAVIGATED, track);
    window.addEventListener('popstate', onPop);
    setSessionLostHandler(() => {
      setSession(null);
      setNotice('Your session has expired or was ended. Sign in again.');
    });
    currentSession().then(setSession, () => setSession(null));
    return () => {
      window.removeEventListener('popstate', onPop);
      window.removeEventListener(NAVIGATED, track);
    };
  }, []);

  useEffect(() => {
    if (!session) return;
    api.info().then(
      (info) => setUnsandboxed(info.sandbox?.enabled === false ? (info.sandbox.warning ?? 'functions run WITHOUT a sandbox (docs/sandbox.md)') : null),
      () => undefined,
    );
  }, [session]);

  useEffect(() => {
    const title = path.startsWith('/policies') ? 'Network policies' : path.startsWith('/functions/') ? 'Function' : 'Functions';
    document.title = session ? `${title} · fnhost admin` : 'Sign in · fnhost admin';
  }, [path, session]);

  if (session === undefined) return <p className="loading" role="status">Loading…</p>;
  if (session === null)
    return (
      <SignInPage
        notice={notice}
        onSignedIn={(s) => {
          setNotice(null);
          setSession(s);
        }}
      />
    );

  const doSignOut = async () => {
    await signOut().catch(() => undefined);
    setNotice('You have signed out.');
    setSession(null);
  };

  const link = (to: string, label: string, current: boolean) => (
    <a
      href={`/admin${to}`}
      aria-current={current ? 'page' : undefined}
      onClick={(e) => {
        e.preventDefault();
        navigate(to);
      }}
    >
      {label}
    </a>
  );

  let page;
  const fnMatch = /^\/functions\/([^/]+)$/.exec(path);
  if (fnMatch) page = <FunctionPage key={fnMatch[1]} fnRef={decodeURIComponent(fnMatch[1]!)} navigate={navigate} />;
  else if (path === '/policies') page = <PoliciesPage />;
  else page = <FunctionsPage navigate={navigate} />;

  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">fnhost admin</span>
        <nav aria-label="Main">
          {link('/', 'Functions', path === '/' || path.startsWith('/functions'))}
          {link('/policies', 'Network policies', path === '/policies')}
        </nav>
        <button type="button" className="secondary" onClick={() => void doSignOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {unsandboxed !== null && (
          <p role="note" className="banner-warning">
            <strong>No sandbox:</strong> {unsandboxed}
          </p>
        )}
        {page}
      </main>
    </>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
