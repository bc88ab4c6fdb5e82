import { useEffect, useRef, useState } from 'react';
import { api, type ExecutionDetail, type FunctionLatency, type LatencySummary } from './api.ts';
import { formatTime } from './time.ts';

// One execution opened from the logs table (its row's time, a button: click or Enter): the
// record's fields, then what it wrote through console, both streams in order with each line's
// offset; and the latency summary shown with the chart. Same data as `fnhost function:logs --id`.

function statusClass(code: number): string {
  return code >= 400 ? 'bad' : code >= 200 && code < 300 ? 'good' : 'neutral';
}

function coldText(d: ExecutionDetail): string {
  if (d.cold_start === undefined) return '—';
  return d.cold_start ? `yes: waited ${d.wait_ms ?? 0} ms for a runtime to start` : `no${d.wait_ms ? ` (waited ${d.wait_ms} ms)` : ''}`;
}

export function ExecutionView(props: { fnRef: string; logId: string; onClose: () => void }) {
  const [detail, setDetail] = useState<ExecutionDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    let live = true;
    setDetail(null);
    setError(null);
    api.log(props.fnRef, props.logId).then(
      (d) => live && setDetail(d),
      (err: unknown) => live && setError(err instanceof Error ? err.message : String(err)),
    );
    return () => {
      live = false;
    };
  }, [props.fnRef, props.logId]);
  // Keyboard users land on the opened record.
  useEffect(() => heading.current?.focus(), [props.logId]);

  return (
    <section aria-labelledby="execution-h" className="card execution">
      <h2 id="execution-h" tabIndex={-1} ref={heading}>
        Execution <code>{props.logId}</code>
      </h2>
      <p>
        <button type="button" className="secondary" onClick={props.onClose}>
          Close
        </button>
      </p>
      {error !== null && <p role="alert" className="error-box">{error}</p>}
      {detail === null && error === null && <p role="status">Loading…</p>}
      {detail !== null && (
        <>
          <dl className="details">
            <dt>Executed at</dt>
            <dd>{formatTime(detail.executed_at)}</dd>
            <dt>Status</dt>
            <dd>
              <span className={`badge ${statusClass(detail.status_code)}`}>{detail.status_code}</span>
            </dd>
            <dt>Duration</dt>
            <dd>{detail.execution_time_ms} ms</dd>
            <dt>Trigger</dt>
            <dd>{detail.trigger}</dd>
            <dt>Cold start</dt>
            <dd>{coldText(detail)}</dd>
            <dt>Error</dt>
            <dd>{detail.error_message ?? '—'}</dd>
          </dl>
          {detail.error_stack && <pre className="code">{detail.error_stack}</pre>}
          <h3>Console output</h3>
          {detail.console === null ? (
            <p>No console output was recorded (the handler wrote none, capture is off, or it is still on its way).</p>
          ) : (
            <>
              <pre className="code console" aria-label="Console output">
                {detail.console.lines.map((l, i) => (
                  <span key={i} className={l.stream === 'stderr' ? 'stderr' : 'stdout'}>
                    {`+${l.at_ms}ms ${l.stream === 'stderr' ? 'err' : 'out'} ${l.text}\n`}
                  </span>
                ))}
              </pre>
              {detail.console.dropped_lines > 0 && (
                <p>
                  {detail.console.dropped_lines} more lines ({detail.console.dropped_bytes} bytes) were dropped past the 1,000 lines / 64 KiB kept.
                </p>
              )}
            </>
          )}
        </>
      )}
    </section>
  );
}

function summaryCells(s: LatencySummary) {
  const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);
  return (
    <>
      <td className="num">{s.count}</td>
      <td className="num">{ms(s.p50_ms)}</td>
      <td className="num">{ms(s.p95_ms)}</td>
      <td className="num">{ms(s.p99_ms)}</td>
      <td className="num">{s.cold_starts}</td>
    </>
  );
}

/** Counts and percentiles over the last hour and day, from the histogram the gateway keeps as it writes records. */
export function LatencyTable(props: { fnRef: string; version: number }) {
  const [latency, setLatency] = useState<FunctionLatency | null>(null);
  useEffect(() => {
    let live = true;
    api.latency(props.fnRef).then((l) => live && setLatency(l), () => undefined);
    return () => {
      live = false;
    };
  }, [props.fnRef, props.version]);
  if (latency === null) return null;
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label="Latency table">
    <table className="latency">
      <caption>Latency (all executions, not only those kept)</caption>
      <thead>
        <tr>
          <th scope="col">Window</th>
          <th scope="col" className="num">Executions</th>
          <th scope="col" className="num">p50</th>
          <th scope="col" className="num">p95</th>
          <th scope="col" className="num">p99</th>
          <th scope="col" className="num">Cold starts</th>
        </tr>
      </thead>
      <tbody>
        <tr>
          <th scope="row">Last hour</th>
          {summaryCells(latency.last_hour)}
        </tr>
        <tr>
          <th scope="row">Last day</th>
          {summaryCells(latency.last_day)}
        </tr>
      </tbody>
    </table>
    </div>
  );
}
