// Times are stored and sent as ISO 8601 UTC. Shown, they carry their zone:
// a schedule's next run in the schedule's own zone (09:00 for "0 9 * * *"
// whatever the viewer's), everything else in the viewer's zone (the process's,
// so TZ=Europe/Paris fnhost ... is honoured), named after the time where a
// line has room for it (docs/cli.md, Times and zones).

function two(n: number): string {
  return n < 10 ? '0' + n : String(n);
}

/** `2026-11-22 14:03:07` in the local time zone; the input unchanged when it is not a date. */
export function formatLocalDateTime(iso: string | number): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return (
    `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ` +
    `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`
  );
}

/** The viewer's IANA zone (`Europe/Paris`, `UTC`), as TZ sets it. */
export function localZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** `2026-11-22 14:03:07 Europe/Paris`: the local time with its zone named. */
export function formatLocalDateTimeWithZone(iso: string | number): string {
  const text = formatLocalDateTime(iso);
  return text === String(iso) ? text : `${text} ${localZone()}`;
}

/** `2026-11-26 09:00:00 Europe/Paris`: the time as a clock in `zone` reads it, and the zone. */
export function formatDateTimeInZone(iso: string | number, zone: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${zone}`;
}
