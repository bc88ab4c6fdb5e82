import { useEffect, useId, useRef, useState, type ReactNode, type RefObject } from 'react';

// Small pieces the pages share: a button that asks before it acts, text cut
// to a few lines with a way to read it whole, and a note that a table has
// columns beyond the screen's edge.

/** A button whose action runs only once the user confirms it in place (no modal: focus moves to the confirm button). */
export function ConfirmButton(props: { label: string; question: ReactNode; confirmLabel: string; disabled?: boolean; onConfirm: () => void }) {
  const [asking, setAsking] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  const openerRef = useRef<HTMLButtonElement>(null);
  const refocus = useRef(false);
  const id = useId();
  useEffect(() => {
    if (asking) confirmRef.current?.focus();
    else if (refocus.current) {
      refocus.current = false;
      openerRef.current?.focus();
    }
  }, [asking]);
  if (!asking)
    return (
      <button type="button" className="secondary" ref={openerRef} disabled={props.disabled} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  const cancel = () => {
    refocus.current = true;
    setAsking(false);
  };
  return (
    <div className="confirm" role="group" aria-labelledby={`${id}-q`} onKeyDown={(e) => e.key === 'Escape' && cancel()}>
      <p id={`${id}-q`}>{props.question}</p>
      <button
        type="button"
        className="danger"
        ref={confirmRef}
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        {props.confirmLabel}
      </button>
      <button type="button" className="secondary" onClick={cancel}>
        Cancel
      </button>
    </div>
  );
}

/** How much of a long message shows before "Show all". */
export const CLAMP_CHARS = 240;

/** Text cut at CLAMP_CHARS characters, with a button to show it whole and to cut it again. */
export function ClampedText(props: { text: string; limit?: number }) {
  const limit = props.limit ?? CLAMP_CHARS;
  const [open, setOpen] = useState(false);
  if (props.text.length <= limit) return <>{props.text}</>;
  return (
    <>
      <span className="clamped">{open ? props.text : `${props.text.slice(0, limit)}…`}</span>{' '}
      <button type="button" className="link" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'Show less' : `Show all (${props.text.length} characters)`}
      </button>
    </>
  );
}

/** How many columns of the table in `wrap` lie past its right edge (0 when all fit); follows resizes. */
export function useHiddenColumns(wrap: RefObject<HTMLElement | null>, deps: unknown[]): number {
  const [hidden, setHidden] = useState(0);
  useEffect(() => {
    const el = wrap.current;
    if (!el) return;
    const measure = () => {
      const edge = el.getBoundingClientRect().right;
      const cells = [...el.querySelectorAll('thead th')];
      setHidden(el.scrollWidth > el.clientWidth + 1 ? cells.filter((c) => c.getBoundingClientRect().right > edge + 1).length : 0);
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    el.addEventListener('scroll', measure, { passive: true });
    return () => {
      observer.disconnect();
      el.removeEventListener('scroll', measure);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  return hidden;
}
