import type { Bucket } from './stats.ts';
import { formatTime } from './time.ts';

// An SVG chart (no inline style, no external library): bars of executions
// with their errors stacked in red, and a line of p95 duration on its own
// scale. The same numbers are in a table below it for screen readers.

const W = 640;
const H = 220;
const PAD = { left: 40, right: 48, top: 12, bottom: 28 };

function label(ms: number, width: number): string {
  const d = new Date(ms);
  return width >= 86_400_000 ? d.toLocaleDateString() : d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: width < 60_000 ? '2-digit' : undefined });
}

export function ExecutionsChart(props: { buckets: Bucket[]; sample: number }) {
  const { buckets } = props;
  if (buckets.length === 0) return <p>No executions yet.</p>;
  const width = buckets.length > 1 ? buckets[1]!.start - buckets[0]!.start : 60_000;
  const maxCount = Math.max(1, ...buckets.map((b) => b.executions));
  const maxP95 = Math.max(1, ...buckets.map((b) => b.p95Ms ?? 0));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / buckets.length;
  const y = (n: number) => PAD.top + plotH - (n / maxCount) * plotH;
  const yP = (ms: number) => PAD.top + plotH - (ms / maxP95) * plotH;
  const points = buckets
    .map((b, i) => (b.p95Ms === null ? null : `${PAD.left + slot * i + slot / 2},${yP(b.p95Ms)}`))
    .filter((p): p is string => p !== null)
    .join(' ');
  const labelEvery = Math.max(1, Math.ceil(buckets.length / 6));
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="chart-title chart-desc" preserveAspectRatio="xMidYMid meet">
        <title id="chart-title">Executions, errors and p95 duration</title>
        <desc id="chart-desc">
          {buckets.length} time buckets from the newest {props.sample} executions; up to {maxCount} executions per bucket, p95 up to {maxP95} ms.
        </desc>
        <line x1={PAD.left} x2={W - PAD.right} y1={PAD.top + plotH} y2={PAD.top + plotH} className="axis" />
        <text x={PAD.left - 6} y={PAD.top + 10} className="tick" textAnchor="end">
          {maxCount}
        </text>
        <text x={PAD.left - 6} y={PAD.top + plotH} className="tick" textAnchor="end">
          0
        </text>
        <text x={W - PAD.right + 6} y={PAD.top + 10} className="tick p95">
          {maxP95} ms
        </text>
        {buckets.map((b, i) => {
          const x = PAD.left + slot * i + slot * 0.15;
          const bw = slot * 0.7;
          return (
            <g key={b.start}>
              <rect x={x} width={bw} y={y(b.executions)} height={PAD.top + plotH - y(b.executions)} className="bar-ok" />
              {b.errors > 0 && <rect x={x} width={bw} y={y(b.errors)} height={PAD.top + plotH - y(b.errors)} className="bar-err" />}
              {i % labelEvery === 0 && (
                <text x={PAD.left + slot * i + slot / 2} y={H - 8} className="tick" textAnchor="middle">
                  {label(b.start, width)}
                </text>
              )}
            </g>
          );
        })}
        {points !== '' && <polyline points={points} className="line-p95" />}
      </svg>
      <figcaption className="legend">
        <span className="key key-ok" aria-hidden="true" /> executions <span className="key key-err" aria-hidden="true" /> errors <span className="key key-p95" aria-hidden="true" /> p95 duration (right scale)
      </figcaption>
      <details>
        <summary>Chart data as a table</summary>
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Chart data table">
          <table>
            <thead>
              <tr>
                <th scope="col">From</th>
                <th scope="col" className="num">Executions</th>
                <th scope="col" className="num">Errors</th>
                <th scope="col" className="num">p95 (ms)</th>
              </tr>
            </thead>
            <tbody>
              {buckets.map((b) => (
                <tr key={b.start}>
                  <td>{formatTime(b.start)}</td>
                  <td className="num">{b.executions}</td>
                  <td className="num">{b.errors}</td>
                  <td className="num">{b.p95Ms ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
