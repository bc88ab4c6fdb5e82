// A small Prometheus text-format registry: counters and gauges with labels.

type Labels = Record<string, string>;

function labelKey(labels: Labels): string {
  const entries = Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1));
  return entries.length ? `{${entries.map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, '_')}"`).join(',')}}` : '';
}

export class Metrics {
  readonly #series = new Map<string, { help: string; type: 'counter' | 'gauge'; values: Map<string, number> }>();
  readonly #gauges = new Map<string, () => number>();

  #get(name: string, help: string, type: 'counter' | 'gauge') {
    let s = this.#series.get(name);
    if (!s) {
      s = { help, type, values: new Map() };
      this.#series.set(name, s);
    }
    return s;
  }

  inc(name: string, help: string, labels: Labels = {}, by = 1): void {
    const s = this.#get(name, help, 'counter');
    const k = labelKey(labels);
    s.values.set(k, (s.values.get(k) ?? 0) + by);
  }

  set(name: string, help: string, value: number, labels: Labels = {}): void {
    this.#get(name, help, 'gauge').values.set(labelKey(labels), value);
  }

  /** A gauge read when scraped. */
  gauge(name: string, help: string, read: () => number): void {
    this.#get(name, help, 'gauge');
    this.#gauges.set(name, read);
  }

  render(): string {
    const lines: string[] = [];
    for (const [name, s] of this.#series) {
      lines.push(`# HELP ${name} ${s.help}`, `# TYPE ${name} ${s.type}`);
      const read = this.#gauges.get(name);
      if (read) lines.push(`${name} ${read()}`);
      for (const [k, v] of s.values) lines.push(`${name}${k} ${v}`);
    }
    return lines.join('\n') + '\n';
  }
}
