import { useCallback, useEffect, useRef, useState } from 'react';
import { api, ApiError, type ApiFunction, type LogPage, type LogRecord, type TestResult } from './api.ts';
import { ExecutionsChart } from './chart.tsx';
import { ExecutionView, LatencyTable } from './execution.tsx';
import { AsyncCalls } from './async-calls.tsx';
import { ScheduleLedger } from './schedule-runs.tsx';
import { setQuery, type Navigate } from './navigation.ts';
import { bucketLogs } from './stats.ts';
import { formatTime } from './time.ts';
import { RecordingCard, StoredRequest } from './replay.tsx';
import { ClampedText, ConfirmButton, useHiddenColumns } from './widgets.tsx';

export function retentionText(r: ApiFunction['retention']): string {
  if (r.type === 'time') return `${r.days} day${r.days === 1 ? '' : 's'}`;
  if (r.type === 'count') return `last ${r.count}`;
  return 'keep all';
}

export function scheduleText(s: ApiFunction['schedule']): string {
  if (s === null) return 'none';
  if (!s.enabled) return `${s.cron} ${s.timezone} (disabled)`;
  return `${s.cron} ${s.timezone}`;
}

/** When the schedule runs next, in the schedule's own zone (named). */
function nextRun(s: ApiFunction['schedule']): string {
  return formatTime(s?.enabled ? s.next_run_at : null, s?.timezone);
}

function StatusBadge(props: { code: number | undefined }) {
  if (props.code === undefined) return <span className="muted">never run</span>;
  const kind = props.code >= 400 ? 'bad' : props.code >= 200 && props.code < 300 ? 'good' : 'neutral';
  return <span className={`badge ${kind}`}>{props.code}</span>;
}

function ActiveBadge(props: { active: boolean }) {
  return <span className={`badge ${props.active ? 'good' : 'neutral'}`}>{props.active ? 'active' : 'inactive'}</span>;
}

function ErrorNote(props: { error: unknown }) {
  if (props.error === null || props.error === undefined) return null;
  const message = props.error instanceof ApiError ? `${props.error.message} (${props.error.code})` : String(props.error);
  return (
    <p role="alert" className="error-box">
      <ClampedText text={message} />
    </p>
  );
}

export function FunctionsPage(props: { navigate: Navigate }) {
  const [fns, setFns] = useState<ApiFunction[] | null>(null);
  const [last, setLast] = useState<Record<string, number | undefined>>({});
  const [error, setError] = useState<unknown>(null);
  const wrap = useRef<HTMLDivElement>(null);
  const hiddenColumns = useHiddenColumns(wrap, [fns]);

  useEffect(() => {
    let live = true;
    api.functions().then(
      async (list) => {
        if (!live) return;
        setFns(list);
        const entries = await Promise.all(
          list.map(async (f) => [f.function_id, (await api.logs(f.function_id, { status: 'all', page: 1, limit: 1 }).catch(() => undefined))?.logs[0]?.status_code] as const),
        );
        if (live) setLast(Object.fromEntries(entries));
      },
      (err) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, []);

  return (
    <>
      <h1>Functions</h1>
      <ErrorNote error={error} />
      {fns === null && !error && <p role="status">Loading functions…</p>}
      {fns !== null && fns.length === 0 && <p>No functions yet. Deploy one with <code>fnhost deploy</code>.</p>}
      {fns !== null && fns.length > 0 && (
        <>
        {hiddenColumns > 0 && (
          <p className="hint" id="functions-table-more">
            {hiddenColumns} more column{hiddenColumns === 1 ? '' : 's'} to the right: scroll the table sideways →
          </p>
        )}
        <div className="table-wrap" ref={wrap} tabIndex={0} role="region" aria-label="Functions table" aria-describedby={hiddenColumns > 0 ? 'functions-table-more' : undefined}>
          <table>
            <caption className="sr-only">All functions</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">State</th>
                <th scope="col">Schedule</th>
                <th scope="col">Next run</th>
                <th scope="col">Retention</th>
                <th scope="col" className="num">Executions</th>
                <th scope="col">Last status</th>
              </tr>
            </thead>
            <tbody>
              {fns.map((f) => (
                <tr key={f.function_id}>
                  <th scope="row">
                    <a
                      href={`/admin/functions/${encodeURIComponent(f.name)}`}
                      onClick={(e) => {
                        e.preventDefault();
                        props.navigate(`/functions/${encodeURIComponent(f.name)}`);
                      }}
                    >
                      {f.name}
                    </a>
                  </th>
                  <td>
                    <ActiveBadge active={f.active} />
                  </td>
                  <td>{scheduleText(f.schedule)}</td>
                  <td>{nextRun(f.schedule)}</td>
                  <td>{retentionText(f.retention)}</td>
                  <td className="num">{f.total_executions}</td>
                  <td>
                    <StatusBadge code={last[f.function_id]} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        </>
      )}
    </>
  );
}

const PAGE_SIZE = 20;
const STATUSES = ['all', 'success', 'error'];

/** The log filter, page and opened record from the URL (?status=error&page=2&log=log_…), so a reload or a shared link shows the same. */
function logQuery(): { status: string; page: number; log: string | undefined } {
  const q = new URLSearchParams(window.location.search);
  const status = q.get('status') ?? 'all';
  const page = Number(q.get('page') ?? '1');
  const log = q.get('log') ?? undefined;
  return { status: STATUSES.includes(status) ? status : 'all', page: Number.isInteger(page) && page >= 1 ? page : 1, log };
}
/** How many of the newest logs feed the chart. */
const CHART_LOGS = 500;

export function FunctionPage(props: { fnRef: string; navigate: Navigate }) {
  const [fn, setFn] = useState<ApiFunction | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [status, setStatus] = useState(() => logQuery().status);
  const [page, setPage] = useState(() => logQuery().page);
  // The record opened from the table (its time is a button), shown above the table.
  const [openLog, setOpenLog] = useState(() => logQuery().log);
  const [logs, setLogs] = useState<LogPage | null>(null);
  const [chartLogs, setChartLogs] = useState<LogRecord[] | null>(null);
  const [busy, setBusy] = useState(false);
  const [test, setTest] = useState<TestResult | null>(null);
  const [version, setVersion] = useState(0);

  const refresh = useCallback(() => setVersion((v) => v + 1), []);

  useEffect(() => {
    setQuery({ status, page: String(page), log: openLog }, { status: 'all', page: '1' });
  }, [status, page, openLog]);

  useEffect(() => {
    api.fn(props.fnRef).then(setFn, setError);
  }, [props.fnRef, version]);

  useEffect(() => {
    let live = true;
    api.logs(props.fnRef, { status, page, limit: PAGE_SIZE }).then(
      (l) => live && setLogs(l),
      (err) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [props.fnRef, status, page, version]);

  useEffect(() => {
    let live = true;
    api.logs(props.fnRef, { status: 'all', page: 1, limit: CHART_LOGS }).then(
      (l) => live && setChartLogs(l.logs),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [props.fnRef, version]);

  const act = async (what: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await what();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      refresh();
    }
  };

  const back = (
    <p>
      <a
        href="/admin/"
        onClick={(e) => {
          e.preventDefault();
          props.navigate('/');
        }}
      >
        ← All functions
      </a>
    </p>
  );

  if (fn === null)
    return (
      <>
        {back}
        <h1>Function {props.fnRef}</h1>
        <ErrorNote error={error} />
        {!error && <p role="status">Loading…</p>}
      </>
    );

  return (
    <>
      {back}
      <h1>
        {fn.name} <ActiveBadge active={fn.active} />
      </h1>
      <ErrorNote error={error} />
      <div className="actions">
        <button type="button" disabled={busy} onClick={() =>
            void act(async () => {
              // A refused run (an inactive function: 403 function_inactive) must not leave the previous result showing.
              setTest(null);
              setTest(await api.test(fn.function_id));
            })
          }
        >
          Run test
        </button>
        {fn.active ? (
          <ConfirmButton
            label="Deactivate"
            question={<>Deactivate {fn.name}? Its calls will be refused with 403 and its schedule will not run until it is activated again.</>}
            confirmLabel="Yes, deactivate"
            disabled={busy}
            onConfirm={() => void act(() => api.setActive(fn.function_id, false))}
          />
        ) : (
          <button type="button" className="secondary" disabled={busy} onClick={() => void act(() => api.setActive(fn.function_id, true))}>
            Activate
          </button>
        )}
        <button type="button" className="secondary" disabled={busy} onClick={refresh}>
          Refresh
        </button>
      </div>
      {test && (
        <section aria-labelledby="test-h" className="card" aria-live="polite">
          <h2 id="test-h">{'manual' in test ? 'Schedule run (manual)' : 'Test run'}</h2>
          <p>
            Status <StatusBadge code={test.status_code} /> in {test.execution_time_ms} ms{test.error_message ? ': ' : ''}
            {test.error_message ? <ClampedText text={test.error_message} /> : null}
          </p>
          <pre className="code">{typeof test.body === 'string' ? test.body : JSON.stringify(test.body, null, 2)}</pre>
        </section>
      )}
      <section aria-labelledby="details-h" className="card">
        <h2 id="details-h">Details</h2>
        <dl className="details">
          <dt>Function id</dt>
          <dd>
            <code>{fn.function_id}</code>
          </dd>
          <dt>Invocation URL</dt>
          <dd>
            <code>{fn.invocation_url}</code>
          </dd>
          <dt>Schedule</dt>
          <dd>{scheduleText(fn.schedule)}</dd>
          <dt>Next run</dt>
          <dd>{nextRun(fn.schedule)}</dd>
          <dt>Retention</dt>
          <dd>{retentionText(fn.retention)}</dd>
          <dt>Limits</dt>
          <dd>
            {fn.timeout_seconds} s, {fn.memory_mib} MiB
          </dd>
          <dt>Routes</dt>
          <dd>{fn.routes.length === 0 ? 'any path' : fn.routes.join(', ')}</dd>
          <dt>Total executions</dt>
          <dd>{fn.total_executions}</dd>
          {fn.kv !== undefined && (
            <>
              <dt>KV</dt>
              <dd data-testid="kv-usage">{kvUsageText(fn.kv)}</dd>
            </>
          )}
          <dt>Created / updated</dt>
          <dd>
            {formatTime(fn.created_at)} / {formatTime(fn.updated_at)}
          </dd>
        </dl>
      </section>
      <RecordingCard key={fn.updated_at} fn={fn} onSaved={refresh} />
      {fn.schedule !== null && (
        <section aria-labelledby="schedule-runs-h" className="card">
          <h2 id="schedule-runs-h">Scheduled runs</h2>
          <ScheduleLedger
            fnRef={fn.function_id}
            version={version}
            busy={busy}
            onRun={() =>
              void act(async () => {
                setTest(null);
                setTest(await api.runSchedule(fn.function_id));
              })
            }
          />
        </section>
      )}
      <section aria-labelledby="async-calls-h" className="card">
        <h2 id="async-calls-h">Async calls</h2>
        <AsyncCalls fnRef={fn.function_id} version={version} busy={busy} onRetry={(which) => void act(() => api.retryAsync(fn.function_id, which))} />
      </section>
      <section aria-labelledby="chart-h" className="card">
        <h2 id="chart-h">Executions over time</h2>
        {chartLogs === null ? <p role="status">Loading…</p> : <ExecutionsChart buckets={bucketLogs(chartLogs)} sample={chartLogs.length} />}
        <LatencyTable fnRef={fn.function_id} version={version} />
      </section>
      {openLog !== undefined && <ExecutionView fnRef={fn.function_id} logId={openLog} onClose={() => setOpenLog(undefined)} />}
      <section aria-labelledby="logs-h" className="card">
        <h2 id="logs-h">Execution logs</h2>
        <div className="toolbar">
          <label htmlFor="status-filter">Status</label>
          <select
            id="status-filter"
            value={status}
            onChange={(e) => {
              setStatus(e.target.value);
              setPage(1);
            }}
          >
            <option value="all">all</option>
            <option value="success">success (2xx)</option>
            <option value="error">error (4xx, 5xx)</option>
          </select>
        </div>
        {logs === null ? (
          <p role="status">Loading…</p>
        ) : (
          <>
            <div className="table-wrap" tabIndex={0} role="region" aria-label="Execution logs table">
              <table className="records logs">
                <caption className="sr-only">Execution logs, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Executed at</th>
                    <th scope="col">Status</th>
                    <th scope="col" className="num">Time (ms)</th>
                    <th scope="col">Trigger</th>
                    <th scope="col">Error</th>
                  </tr>
                </thead>
                <tbody>
                  {logs.logs.length === 0 && (
                    <tr>
                      <td colSpan={5}>No executions{status === 'all' ? '' : ` with status ${status}`}.</td>
                    </tr>
                  )}
                  {logs.logs.map((l) => (
                    <tr key={l.id} data-log-id={l.id} className={l.id === openLog ? 'opened' : undefined}>
                      <td data-label="Executed at">
                        <button type="button" className="link" aria-label={`Open the execution of ${formatTime(l.executed_at)}`} onClick={() => setOpenLog(l.id)}>
                          {formatTime(l.executed_at)}
                        </button>
                      </td>
                      <td data-label="Status">
                        <StatusBadge code={l.status_code} />
                      </td>
                      <td data-label="Time (ms)" className="num">
                        {l.execution_time_ms}
                      </td>
                      <td data-label="Trigger">
                        {l.trigger}
                        {l.cold_start ? <span className="muted"> · cold start</span> : null}
                      </td>
                      <td data-label="Error" className="err">
                        {l.error_message ? <ClampedText text={l.error_message} limit={160} /> : ''}
                        {l.error_stack && (
                          // The thrown error's frames in the owner's own files (source-mapped by the CLI's bundle).
                          <details className="stack">
                            <summary>Stack</summary>
                            <pre className="code">{l.error_stack}</pre>
                          </details>
                        )}
                        {fn.record_requests?.enabled && <StoredRequest fnRef={fn.function_id} fnName={fn.name} logId={l.id} />}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <nav className="pager" aria-label="Log pages">
              <button type="button" className="secondary" disabled={!logs.pagination.hasPrevPage} onClick={() => setPage((p) => Math.max(1, p - 1))}>
                Newer
              </button>
              <span aria-live="polite">
                Page {logs.pagination.currentPage} of {logs.pagination.totalPages} ({logs.pagination.totalCount} total)
              </span>
              <button type="button" className="secondary" disabled={!logs.pagination.hasNextPage} onClick={() => setPage((p) => p + 1)}>
                Older
              </button>
            </nav>
          </>
        )}
      </section>
    </>
  );
}

/** `12 keys of 100000, 1.2 MiB of 100 MiB (1%)` as `fnhost function:get` says it (docs/kv.md "Usage"). */
export function kvUsageText(kv: NonNullable<ApiFunction['kv']>): string {
  const size = (n: number): string => {
    if (n < 1024) return `${n} B`;
    const units = ['KiB', 'MiB', 'GiB', 'TiB'];
    let v = n / 1024;
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return `${v >= 100 ? Math.round(v) : v.toFixed(1).replace(/\.0$/, '')} ${units[i]}`;
  };
  const pct = kv.max_bytes > 0 ? Math.floor((100 * kv.bytes) / kv.max_bytes) : 0;
  const ns = kv.namespace_max_bytes === undefined ? '' : `; namespace ${size(kv.namespace_bytes ?? 0)} of ${size(kv.namespace_max_bytes)}`;
  return `${kv.keys} key${kv.keys === 1 ? '' : 's'} of ${kv.max_keys}, ${size(kv.bytes)} of ${size(kv.max_bytes)} (${pct}%)${ns}`;
}
