// Every value the console writes into a page goes through `html`: a tagged template that escapes each
// interpolation unless it is markup this file made (`Markup`). A stored value cannot open a tag, close an
// attribute or start a script, and control characters and bidi overrides show as visible escapes.

/** Markup the console wrote itself; only `html`, `raw` and `join` make it. */
export class Markup {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

// C0/C1 controls (but tab and line feed), DEL, and the bidi overrides and isolates.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is this pattern's job.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Text as HTML text or attribute value: markup characters escaped, control characters made visible. */
export function escapeHtml(value: string): string {
  return value
    .replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)?.toString(16)}}`)
    .replace(/[&<>"'`]/g, (c) => ENTITIES[c] as string);
}

type Value = Markup | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Markup) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** `html\`<td>${value}</td>\``: every interpolation escaped, nested `html` kept. */
export function html(strings: TemplateStringsArray, ...values: Value[]): Markup {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new Markup(out);
}

/** How many characters of a stored value a table cell shows; the run page shows it whole, wrapped. */
export const CELL_CHARS = 120;

/** A stored value for a table cell: escaped, and cut to `max` characters with the rest counted. */
export function cell(value: string | null | undefined, max = CELL_CHARS): Markup {
  if (value === null || value === undefined || value === '') return html`<span class="none">-</span>`;
  const chars = [...value];
  if (chars.length <= max) return html`${value}`;
  return html`${chars.slice(0, max).join('')}<span class="more">… (${chars.length - max} more characters)</span>`;
}

/** A time for people: ISO 8601 in UTC, in a <time> element. */
export function time(value: Date | string | null | undefined): Markup {
  if (value === null || value === undefined) return html`<span class="none">-</span>`;
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return html`${String(value)}`;
  const iso = date.toISOString();
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</time>`;
}

/** JSON for a <pre>: indented, escaped. */
export function jsonBlock(value: unknown): Markup {
  return html`<pre class="json">${JSON.stringify(value, null, 2) ?? 'null'}</pre>`;
}
