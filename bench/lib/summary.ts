// One line per headline figure of a bench, beside its readable output, so `make bench`
// (bench/all.ts) can put every bench's figures in one table at the end. A figure is a ratio or
// a bound from performance-targets.md, measured in the run that prints it.

export const FIGURE_PREFIX = 'fnhost-bench-figure ';

export interface Figure {
  /** The target's row: P1, P2b, P10, … */
  target: string;
  /** What was measured, in a few words. */
  what: string;
  /** The figure as printed (with its unit: 0.91×, +0.42 ms, 612 MiB). */
  measured: string;
  /** The bound it is held to, as in performance-targets.md (≥ 0.8×, ≤ 1 ms). */
  bound: string;
  met: boolean;
}

export function reportFigure(figure: Figure): void {
  console.log(FIGURE_PREFIX + JSON.stringify(figure));
}

/** The figures a bench printed (lines of its output). */
export function figuresIn(output: string): Figure[] {
  const out: Figure[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith(FIGURE_PREFIX)) continue;
    try {
      out.push(JSON.parse(line.slice(FIGURE_PREFIX.length)) as Figure);
    } catch {
      // a cut line: the bench died while printing
    }
  }
  return out;
}
