import { useEffect } from 'react';

// Leaving a page with unsaved edits: the panel's own links, the browser's
// back and forward buttons and a reload or closed tab all ask first. A page
// says it holds unsaved edits with useUnsavedChanges; the shell (main.tsx)
// asks confirmLeave() before it moves.

export type Navigate = (path: string) => void;

/** Fired on window whenever the panel changes the URL itself (popstate is only the browser's moves). */
export const NAVIGATED = 'fnhost:navigated';

let unsaved: string | null = null;

/** True when nothing unsaved would be lost, or the user agreed to lose it. */
export function confirmLeave(): boolean {
  if (unsaved === null) return true;
  if (!window.confirm(unsaved)) return false;
  unsaved = null;
  return true;
}

/** While `question` is not null, leaving the page asks it (window.confirm; beforeunload for reloads and closed tabs). */
export function useUnsavedChanges(question: string | null): void {
  useEffect(() => {
    if (question === null) return;
    unsaved = question;
    const onBeforeUnload = (e: BeforeUnloadEvent) => {
      e.preventDefault();
    };
    window.addEventListener('beforeunload', onBeforeUnload);
    return () => {
      window.removeEventListener('beforeunload', onBeforeUnload);
      if (unsaved === question) unsaved = null;
    };
  }, [question]);
}

/** The page's own query string (filters, page numbers) without a new history entry. */
export function setQuery(params: Record<string, string | undefined>, defaults: Record<string, string>): void {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== defaults[k]) q.set(k, v);
  const search = q.toString();
  window.history.replaceState(window.history.state, '', `${window.location.pathname}${search === '' ? '' : `?${search}`}`);
  window.dispatchEvent(new Event(NAVIGATED));
}
