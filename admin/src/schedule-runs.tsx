import { useEffect, useState } from 'react';
import { api, type ScheduleRuns } from './api.ts';
import { formatTime } from './time.ts';

// The function page's ledger of scheduled runs: each planned run with the
// record it produced and how late it started, or why it was missed, and the
// next planned runs, all in the schedule's own zone (named). "Run schedule
// now" fires it by hand (a manual schedule run, entered here too).

const REASONS: Record<string, string> = {
  platform_down: 'missed: the platform was down',
  function_inactive: 'missed: the function was inactive',
  previous_running: 'missed: the previous run was still going',
};

function lagText(ms: number | null): string {
  if (ms === null) return '—';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export function ScheduleLedger(props: { fnRef: string; version: number; busy: boolean; onRun: () => void }) {
  const [ledger, setLedger] = useState<ScheduleRuns | null>(null);
  const [failed, setFailed] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    api.scheduleRuns(props.fnRef).then(
      (l) => live && setLedger(l),
      (err: Error) => live && setFailed(err.message),
    );
    return () => {
      live = false;
    };
  }, [props.fnRef, props.version]);

  if (ledger === null) return failed === null ? <p role="status">Loading…</p> : <p role="alert">{failed}</p>;
  const zone = ledger.schedule?.timezone ?? 'UTC';
  return (
    <>
      <p className="muted">
        Times in {zone} (the schedule's zone). Overlapping runs: {ledger.concurrency_policy}; a run missed while the platform was down starts up to{' '}
        {ledger.starting_deadline_seconds} s late.
      </p>
      <div className="actions">
        <button type="button" className="secondary" disabled={props.busy || ledger.schedule === null} onClick={props.onRun}>
          Run schedule now
        </button>
      </div>
      <p>
        Next planned: {ledger.next_runs.length === 0 ? '—' : ledger.next_runs.map((t) => formatTime(t, zone)).join('; ')}
      </p>
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Scheduled runs table">
        <table className="records schedule-runs">
          <caption className="sr-only">Scheduled runs, newest planned first</caption>
          <thead>
            <tr>
              <th scope="col">Planned</th>
              <th scope="col">Outcome</th>
              <th scope="col" className="num">Lag</th>
              <th scope="col" className="num">Time (ms)</th>
              <th scope="col">Log</th>
            </tr>
          </thead>
          <tbody>
            {ledger.runs.length === 0 && (
              <tr>
                <td colSpan={5}>No scheduled run yet.</td>
              </tr>
            )}
            {ledger.runs.map((r) => (
              <tr key={`${r.planned_at}-${r.log_id ?? r.missed_reason}`} data-outcome={r.outcome}>
                <td data-label="Planned">
                  {formatTime(r.planned_at, zone)}
                  {r.manual ? ' (manual)' : ''}
                </td>
                <td data-label="Outcome">
                  {r.outcome === 'ran' ? (
                    <span className={`badge ${r.status_code! >= 400 ? 'bad' : r.status_code! >= 200 && r.status_code! < 300 ? 'good' : 'neutral'}`}>{r.status_code}</span>
                  ) : (
                    <span className="badge neutral">{REASONS[r.missed_reason ?? ''] ?? 'missed'}</span>
                  )}
                </td>
                <td data-label="Lag" className="num">
                  {lagText(r.lag_ms)}
                </td>
                <td data-label="Time (ms)" className="num">
                  {r.execution_time_ms ?? '—'}
                </td>
                <td data-label="Log">{r.log_id ? <code>{r.log_id}</code> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
