// Width-aware text helpers. Widths count code points: the table's content is
// ASCII apart from the status markers and whatever an error message holds, and
// a wide character at worst makes one line a column longer.

// C0/C1 control characters (ESC included) and DEL: an error text or a name
// printed raw could move the cursor or recolour the terminal.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** One line of printable text: whitespace runs become one space, control characters go. */
export function oneLine(text: string): string {
  return text.replace(/[\t\n\r]+/g, ' ').replace(CONTROL, '').replace(/ {2,}/g, ' ').trim();
}

/** Strips control characters but keeps newlines and tabs (multi-line bodies). */
export function printable(text: string): string {
  return text.replace(CONTROL, '');
}

export function displayWidth(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Shortens `text` to at most `width` columns, ending with `…` when cut. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return '';
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  if (width === 1) return '…';
  return chars.slice(0, width - 1).join('') + '…';
}

export function padEnd(text: string, width: number): string {
  const w = displayWidth(text);
  return w >= width ? text : text + ' '.repeat(width - w);
}

export function padStart(text: string, width: number): string {
  const w = displayWidth(text);
  return w >= width ? text : ' '.repeat(width - w) + text;
}
