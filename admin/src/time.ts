// Every time the panel shows carries its zone. A schedule's next run is shown
// in the schedule's own zone (09:00 for "0 9 * * *" in Europe/Paris, wherever
// the browser is), everything else in the browser's zone; both name the zone
// after the time (docs/admin-panel.md, Times and zones), as the CLI does.

/** The browser's IANA zone, e.g. `Europe/Paris`. */
export function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** `26 Nov 2026, 09:00:00 Europe/Paris`: in `zone` (default the browser's), the zone named; `—` for none. */
export function formatTime(iso: string | number | null | undefined, zone?: string): string {
  if (iso === null || iso === undefined || iso === '') return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const shown = zone ?? browserZone();
  return `${date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone: shown })} ${shown}`;
}
