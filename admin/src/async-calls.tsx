import { useEffect, useState } from 'react';
import { api, type ApiAsyncCall } from './api.ts';
import { formatTime } from './time.ts';
import { ConfirmButton } from './widgets.tsx';

// The function page's async calls (docs/async.md), as `fnhost function:async`
// lists them: the queued, running and dead ones, oldest accepted first, each
// with its attempts (a lost one: the gateway running it stopped), when it
// runs next or why it died; a dead call is requeued from here (one, or all:
// `fnhost function:async:retry`). Finished calls are read through their
// capability URL or the execution logs (trigger async).

const STATES = ['queued', 'running', 'dead'] as const;
const LIMIT = 100;

const DEAD_REASONS: Record<string, string> = {
  retries_exhausted: 'retries used up',
  max_age: 'too old to try again',
};

/** Each attempt as `1: 500`, a lost one (its gateway stopped) as `2: lost`. */
export function attemptsText(call: Pick<ApiAsyncCall, 'attempts'>): string {
  if (call.attempts.length === 0) return '—';
  return call.attempts.map((a) => `${a.attempt}: ${a.status_code ?? 'lost'}`).join(', ');
}

/** What comes next for the call: its next attempt, that it is running, or why it died. */
export function nextText(call: Pick<ApiAsyncCall, 'state' | 'next_attempt_at' | 'dead_reason'>, zone?: string): string {
  if (call.state === 'dead') return DEAD_REASONS[call.dead_reason ?? ''] ?? call.dead_reason ?? 'dead';
  if (call.state === 'queued') return call.next_attempt_at === null ? '—' : `attempt at ${formatTime(call.next_attempt_at, zone)}`;
  if (call.state === 'running') return 'running now';
  return '—';
}

function stateBadge(state: ApiAsyncCall['state']): string {
  return state === 'dead' ? 'bad' : state === 'succeeded' ? 'good' : 'neutral';
}

export function AsyncCalls(props: { fnRef: string; version: number; busy: boolean; onRetry: (which: readonly string[] | 'all') => void }) {
  const [calls, setCalls] = useState<ApiAsyncCall[] | null>(null);
  const [failed, setFailed] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    api.asyncCalls(props.fnRef, STATES, LIMIT).then(
      (page) => {
        if (!live) return;
        setCalls(page.calls);
        setFailed(null);
      },
      (err: Error) => live && setFailed(err.message),
    );
    return () => {
      live = false;
    };
  }, [props.fnRef, props.version]);

  if (calls === null) return failed === null ? <p role="status">Loading…</p> : <p role="alert">{failed}</p>;
  const dead = calls.filter((c) => c.state === 'dead').length;
  return (
    <>
      <p className="muted">
        Queued, running and dead calls, oldest accepted first{calls.length === LIMIT ? ` (the first ${LIMIT})` : ''}. A dead call keeps its request until it is retried or its
        retention ends; a retry is a new call (attempts from 1).
      </p>
      <div className="actions">
        <ConfirmButton
          label="Retry all dead"
          question={<>Requeue the {dead === LIMIT ? 'dead calls' : `${dead} dead call${dead === 1 ? '' : 's'}`}? Each runs the function again.</>}
          confirmLabel="Yes, retry all"
          disabled={props.busy || dead === 0}
          onConfirm={() => props.onRetry('all')}
        />
      </div>
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Async calls table">
        <table className="records async-calls">
          <caption className="sr-only">Async calls, oldest accepted first</caption>
          <thead>
            <tr>
              <th scope="col">Async id</th>
              <th scope="col">State</th>
              <th scope="col">Accepted</th>
              <th scope="col">Request</th>
              <th scope="col">Attempts</th>
              <th scope="col">Next</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {calls.length === 0 && (
              <tr>
                <td colSpan={7}>No queued, running or dead calls.</td>
              </tr>
            )}
            {calls.map((c) => (
              <tr key={c.async_id} data-async-id={c.async_id} data-state={c.state}>
                <td data-label="Async id">
                  <code>{c.async_id}</code>
                </td>
                <td data-label="State">
                  <span className={`badge ${stateBadge(c.state)}`}>{c.state}</span>
                </td>
                <td data-label="Accepted">{formatTime(c.accepted_at)}</td>
                <td data-label="Request">{c.request === null ? '—' : <code>{`${c.request.method} ${c.request.path}`}</code>}</td>
                <td data-label="Attempts">{attemptsText(c)}</td>
                <td data-label="Next">{nextText(c)}</td>
                <td data-label="Actions">
                  {c.state === 'dead' && (
                    <button type="button" className="secondary" disabled={props.busy} aria-label={`Retry ${c.async_id}`} onClick={() => props.onRetry([c.async_id])}>
                      Retry
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
