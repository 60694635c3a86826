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

export function indent(text: string, by = '  '): string {
  return escapeTerminal(text)
    .split('\n')
    .map((l) => by + l)
    .join('\n');
}

export function jaegerTraceUrl(base: string, traceId: string): string {
  return `${base.replace(/\/+$/, '')}/trace/${encodeURIComponent(traceId)}`;
}
