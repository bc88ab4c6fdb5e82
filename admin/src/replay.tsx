import { useState } from 'react';
import { api, ApiError, type ApiFunction, type ApiRecordedExchange, type RecordedBody, type RequestRecording } from './api.ts';

// Request recording in the panel (docs/replay.md): the function's opt-in
// setting with its body bound and redaction policy, and a record's stored
// request and response, loaded only when opened (never in the log listing).

const lines = (text: string) => text.split('\n').map((l) => l.trim()).filter((l) => l !== '');

export function recordingSummary(r: RequestRecording | undefined): string {
  if (r === undefined || !r.enabled) return 'off';
  const masked = [...r.redact.headers, ...r.redact.json_paths];
  return `on, bodies up to ${r.max_body_bytes} bytes${masked.length === 0 ? '' : `, masked: ${masked.join(', ')}`}`;
}

export function RecordingCard(props: { fn: ApiFunction; onSaved: () => void }) {
  const current = props.fn.record_requests;
  const [enabled, setEnabled] = useState(current?.enabled ?? false);
  const [maxBody, setMaxBody] = useState(String(current?.max_body_bytes ?? 65536));
  const [headers, setHeaders] = useState((current?.redact.headers ?? []).join('\n'));
  const [paths, setPaths] = useState((current?.redact.json_paths ?? []).join('\n'));
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);

  const save = async () => {
    setBusy(true);
    setError(null);
    setSaved(false);
    try {
      const n = Number(maxBody);
      await api.setRecording(props.fn.function_id, {
        enabled,
        max_body_bytes: /^\d+$/.test(maxBody.trim()) ? n : (maxBody as unknown as number),
        redact: { headers: lines(headers), json_paths: lines(paths) },
      });
      setSaved(true);
      props.onSaved();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="recording-h" className="card">
      <h2 id="recording-h">Request recording</h2>
      <p>
        Currently: <strong data-testid="recording-summary">{recordingSummary(current)}</strong>. When on, each execution keeps its request (without
        Authorization, Cookie and fnhost's own headers) and response, masked as below, for replay (<code>fnhost function:replay</code>), under the
        function's retention. Bodies may hold personal data: it is off unless turned on.
      </p>
      <form
        className="recording"
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <label>
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Record requests and responses
        </label>
        <label htmlFor="record-max-body">Keep each body up to (bytes, 0–65536)</label>
        <input id="record-max-body" inputMode="numeric" value={maxBody} onChange={(e) => setMaxBody(e.target.value)} />
        <label htmlFor="record-redact-headers">Mask these headers (one a line)</label>
        <textarea id="record-redact-headers" rows={2} value={headers} onChange={(e) => setHeaders(e.target.value)} />
        <label htmlFor="record-redact-paths">Mask these JSON paths (one a line, e.g. $.card.number or $..iban)</label>
        <textarea id="record-redact-paths" rows={2} value={paths} onChange={(e) => setPaths(e.target.value)} />
        <div className="actions">
          <button type="submit" disabled={busy}>
            Save recording
          </button>
        </div>
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
        {saved && <p role="status">Saved.</p>}
      </form>
    </section>
  );
}

function BodyView(props: { body: RecordedBody | null }) {
  const b = props.body;
  if (b === null) return <p>(no body)</p>;
  if (b.omitted !== undefined) return <p>Body not kept: {b.omitted}</p>;
  let shown = b.encoding === 'base64' ? `(binary, base64) ${b.data}` : b.data;
  if (b.encoding === 'utf8') {
    try {
      shown = JSON.stringify(JSON.parse(b.data), null, 2);
    } catch {
      // text as it is
    }
  }
  return (
    <>
      <pre className="code">{shown}</pre>
      {b.truncated && <p>Cut at {b.data.length} of {b.size} bytes.</p>}
    </>
  );
}

/** A record's stored request and response, fetched when the row's "Request" is opened. */
export function StoredRequest(props: { fnRef: string; fnName: string; logId: string }) {
  const [exchange, setExchange] = useState<ApiRecordedExchange | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <details
      className="exchange"
      onToggle={(e) => {
        if ((e.target as HTMLDetailsElement).open && exchange === null && error === null) {
          api.recordedRequest(props.fnRef, props.logId).then(setExchange, (err: unknown) => setError(err instanceof ApiError ? err.message : String(err)));
        }
      }}
    >
      <summary>Request</summary>
      {error && <p>{error}</p>}
      {exchange === null && error === null && <p role="status">Loading…</p>}
      {exchange && (
        <div className="exchange-body">
          <p>
            <code>
              {exchange.request.method} {exchange.request.path}
              {exchange.request.query === '' ? '' : `?${exchange.request.query}`}
            </code>
          </p>
          <pre className="code">{Object.entries(exchange.request.headers).map(([k, v]) => `${k}: ${v}`).join('\n')}</pre>
          <BodyView body={exchange.request.body} />
          <p>Response: {exchange.response === null ? 'none (the platform answered)' : exchange.response.status}</p>
          {exchange.response && <BodyView body={exchange.response.body} />}
          <p>
            Replay it with <code>fnhost function:replay {props.fnName} {props.logId}</code>
          </p>
        </div>
      )}
    </details>
  );
}
