// Times are stored and sent as ISO 8601 UTC; people read them in their own zone.
// The local zone is the process's, so TZ=Europe/Paris fnhost ... is honoured.

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
