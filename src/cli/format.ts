/** Plain-text tables and values for people; `--json` output never goes through here. */

export function formatTime(value: Date | string | null | undefined): string {
  if (value === null || value === undefined) return '-';
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toISOString();
}

/** "4m 12s", for how long ago a lease lapsed. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '-';
  const s = Math.max(0, Math.round(seconds));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts: string[] = [];
  if (d) parts.push(`${d}d`);
  if (h) parts.push(`${h}h`);
  if (m && !d) parts.push(`${m}m`);
  if (!d && !h) parts.push(`${s % 60}s`);
  return parts.join(' ');
}

// C0/C1 controls, DEL, and the bidi overrides and isolates that can make a terminal show text out of order.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is this pattern's job.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/**
 * Makes a stored value safe to write to a terminal: control characters and bidi overrides become visible `\u{..}`
 * escapes, so an id cannot move the cursor, recolour the screen or reorder what support reads.
 */
export function escapeTerminal(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/**
 * `escapeTerminal` for text made of lines: the line breaks the CLI itself put there stay line breaks, and
 * everything else unsafe inside each line is escaped.
 */
export function escapeTerminalLines(text: string): string {
  return text.split('\n').map(escapeTerminal).join('\n');
}

/**
 * `JSON.stringify` escapes C0 controls but leaves C1 controls, bidi overrides and U+2028/2029 raw, and `--json`
 * is read on terminals too (`| jq` or not). Inside JSON those characters only occur in strings, where `\uXXXX` is
 * a valid escape: the output stays the same JSON value and cannot drive the terminal.
 */
export function terminalSafeJson(value: unknown): string {
  // The only raw C0 character JSON.stringify leaves is the line break between members, which stays.
  return JSON.stringify(value, null, 2).replace(UNSAFE, (c) =>
    c === '\n' ? c : `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`,
  );
}

/** A stored or typed value quoted in a sentence, escaped like every other value the CLI echoes. */
export function quoted(value: string): string {
  return `"${escapeTerminal(value)}"`;
}

/** "1 failed run", "2 failed runs". */
export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nouns}`;
}

export function table(headers: readonly string[], unsafeRows: readonly (readonly string[])[]): string {
  const rows = unsafeRows.map((row) => row.map(escapeTerminal));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** Aligned "label  value" lines. */
export function fields(pairs: readonly (readonly [string, string])[]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `  ${k.padEnd(width)}  ${escapeTerminal(v)}`).join('\n');
}

/**
 * Indents text made of lines, such as `JSON.stringify(value, null, 2)`: its line breaks stay line breaks (JSON
 * has already escaped those inside strings), and only what a terminal would act on is escaped within a line.
 */
export function indent(text: string, by = '  '): string {
  return text
    .split('\n')
    .map((l) => by + escapeTerminal(l))
    .join('\n');
}
