import { useEffect, useRef, useState, type RefObject } from 'react';
import { p95Runs, ticks, type Bucket } from './stats.ts';
import { formatTime } from './time.ts';

// An SVG chart (no inline style, no external library): bars of executions
// with their errors stacked in red, and a line of p95 duration on its own
// scale (broken where a bucket is empty: no p95 there). Drawn at the width it
// is shown, so its labels stay readable on a phone. The same numbers are in a table below it for screen readers.

const H = 220;
const PAD = { left: 44, right: 56, top: 24, bottom: 28 };
/** The chart is drawn at the width it is shown (so its text stays ~12 px), within these bounds. */
const MIN_W = 300;
const MAX_W = 1100;
/** Room one time label needs along the axis. */
const LABEL_ROOM = 72;

function label(ms: number, width: number): string {
  const d = new Date(ms);
  return width >= 86_400_000 ? d.toLocaleDateString(undefined, { day: 'numeric', month: 'short' }) : d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: width < 60_000 ? '2-digit' : undefined });
}

/** The width the figure is shown at, followed as it changes. */
function useWidth(): [RefObject<HTMLElement | null>, number] {
  const ref = useRef<HTMLElement>(null);
  const [width, setWidth] = useState(640);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const observer = new ResizeObserver(() => setWidth(Math.round(el.clientWidth)));
    observer.observe(el);
    setWidth(Math.round(el.clientWidth));
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

export function ExecutionsChart(props: { buckets: Bucket[]; sample: number }) {
  const { buckets } = props;
  const [ref, shownWidth] = useWidth();
  if (buckets.length === 0) return <p>No executions yet.</p>;
  const W = Math.max(MIN_W, Math.min(MAX_W, shownWidth));
  const width = buckets.length > 1 ? buckets[1]!.start - buckets[0]!.start : 60_000;
  const maxCount = Math.max(1, ...buckets.map((b) => b.executions));
  const maxP95 = Math.max(1, ...buckets.map((b) => b.p95Ms ?? 0));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / buckets.length;
  const y = (n: number) => PAD.top + plotH - (n / maxCount) * plotH;
  const yP = (ms: number) => PAD.top + plotH - (ms / maxP95) * plotH;
  const xMid = (i: number) => PAD.left + slot * i + slot / 2;
  const labelEvery = Math.max(1, Math.ceil(buckets.length / Math.max(2, Math.floor(plotW / LABEL_ROOM))));
  const runs = p95Runs(buckets);
  return (
    <figure className="chart" ref={ref}>
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-labelledby="chart-title chart-desc">
        <title id="chart-title">Executions, errors and p95 duration</title>
        <desc id="chart-desc">
          {buckets.length} time buckets from the newest {props.sample} executions; up to {maxCount} executions per bucket, p95 up to {maxP95} ms.
        </desc>
        <text x={4} y={12} className="axis-title">
          executions
        </text>
        <text x={W - 4} y={12} className="axis-title p95" textAnchor="end">
          p95 (ms)
        </text>
        <line x1={PAD.left} x2={W - PAD.right} y1={PAD.top + plotH} y2={PAD.top + plotH} className="axis" />
        {ticks(maxCount).map((t) => (
          <g key={`c${t}`}>
            {t > 0 && <line x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} className="grid" />}
            <text x={PAD.left - 6} y={y(t) + 4} className="tick" textAnchor="end">
              {t}
            </text>
          </g>
        ))}
        {ticks(maxP95).map((t) => (
          <text key={`p${t}`} x={W - PAD.right + 6} y={yP(t) + 4} className="tick p95">
            {t}
          </text>
        ))}
        {buckets.map((b, i) => {
          const x = PAD.left + slot * i + slot * 0.15;
          const bw = slot * 0.7;
          return (
            <g key={b.start}>
              <rect x={x} width={bw} y={y(b.executions)} height={PAD.top + plotH - y(b.executions)} className="bar-ok" />
              {b.errors > 0 && <rect x={x} width={bw} y={y(b.errors)} height={PAD.top + plotH - y(b.errors)} className="bar-err" />}
              {i % labelEvery === 0 && (
                <text x={xMid(i)} y={H - 8} className="tick" textAnchor="middle">
                  {label(b.start, width)}
                </text>
              )}
            </g>
          );
        })}
        {runs.map((run) =>
          run.length === 1 ? (
            <circle key={`r${run[0]!.index}`} cx={xMid(run[0]!.index)} cy={yP(run[0]!.p95)} r={3} className="dot-p95" />
          ) : (
            <polyline key={`r${run[0]!.index}`} points={run.map((p) => `${xMid(p.index)},${yP(p.p95)}`).join(' ')} className="line-p95" />
          ),
        )}
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
