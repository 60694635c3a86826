import { SyncCompositeRedactor } from 'redact-pii/lib/SyncCompositeRedactor.js';

// Imported from redact-pii's lib file rather than its entry point: the entry point loads the Google Cloud DLP
// client (and gRPC) at import time, which tool-ledger never uses and must never call.

/** A text pattern kept intact by the free-text redactor, so that support can still find the record it names. */
export type PreservePattern = RegExp;

/**
 * Identifiers that redact-pii's phone and number rules would otherwise mangle: UUIDs (their digit runs look like
 * phone numbers). Ids such as `inv_2024_0042` or `ord-2024-0042` already survive the configuration below.
 */
export const DEFAULT_PRESERVE: readonly PreservePattern[] = [
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi,
];

// Rules that run before redact-pii's built-ins, most specific first, because the built-ins replace parts of longer
// values (an IBAN's digits look like a card number) and leave the rest readable.
const BEFORE: readonly { readonly regexpPattern: RegExp; readonly replaceWith: string }[] = [
  { regexpPattern: /[a-z0-9_\-.+%]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+/gi, replaceWith: 'EMAIL_ADDRESS' },
  { regexpPattern: /\beyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]*/g, replaceWith: 'SECRET' },
  { regexpPattern: /\b(Bearer|Basic)\s+[\w\-.~+/=]+/gi, replaceWith: '$1 SECRET' },
  { regexpPattern: /\b(?:sk|pk|rk)_(?:test|live)_[A-Za-z0-9]{6,}/g, replaceWith: 'SECRET' },
  {
    regexpPattern: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b/g,
    replaceWith: 'SECRET',
  },
  {
    regexpPattern:
      /\b(pass(?:word|phrase|wd)?|pwd|secret|token|api[_-]?key|authorization)(\s*[:=]\s*)("[^"]*"|'[^']*'|\S+)/gi,
    replaceWith: '$1$2SECRET',
  },
  { regexpPattern: /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b/g, replaceWith: 'IBAN' },
  { regexpPattern: /\b(?:\d{1,3}\.){3}\d{1,3}\b/g, replaceWith: 'IP_ADDRESS' },
  // Calendar dates (dates of birth); full timestamps such as 2026-11-30T00:14:01Z are kept for debugging.
  {
    regexpPattern: /\b(?:1[89]|20)\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b(?!T\d)/g,
    replaceWith: 'DATE',
  },
  { regexpPattern: /\b\d{1,2}[/.]\d{1,2}[/.](?:1[89]|20)\d{2}\b/g, replaceWith: 'DATE' },
  // The built-in zip rule also fires on the number of `job-12345`; a zip here must stand alone.
  { regexpPattern: /(?<![\w-])\d{5}(?:-\d{4})?(?![\w-])/g, replaceWith: 'ZIPCODE' },
  // Password-like or key-like tokens: 16+ characters mixing lower case, upper case and digits. Ids such as
  // `inv_2024_0042`, UUIDs and upper-case order numbers do not mix all three, so they are kept.
  {
    regexpPattern: /(?<![\w+/=-])(?=[\w+/=-]*[a-z])(?=[\w+/=-]*[A-Z])(?=[\w+/=-]*\d)[\w+/=-]{16,}/g,
    replaceWith: 'SECRET',
  },
];

// redact-pii's name rule replaces a known first name but leaves the surname after it.
const AFTER: readonly { readonly regexpPattern: RegExp; readonly replaceWith: string }[] = [
  { regexpPattern: /PERSON_NAME(?:[ \t]+[A-Z][A-Za-z'’-]+)+/g, replaceWith: 'PERSON_NAME' },
];

const PLACEHOLDER_OPEN = '\uE000zq';
const PLACEHOLDER_CLOSE = '\uE001';
const PLACEHOLDER = /\uE000zq([a-z]+)\uE001/g;

function encodeIndex(index: number): string {
  let out = '';
  let n = index;
  do {
    out = String.fromCharCode(97 + (n % 26)) + out;
    n = Math.floor(n / 26);
  } while (n > 0);
  return out;
}

function decodeIndex(letters: string): number {
  let n = 0;
  for (const c of letters) n = n * 26 + (c.charCodeAt(0) - 97);
  return n;
}

/**
 * Free-text detection: redact-pii's regex rules (locally, never Google DLP), with the rules that destroy
 * identifiers turned off (`digits`, the loose zip rule) and more specific rules in front. Returns a function that
 * scrubs one string.
 */
export function createFreeTextRedactor(
  preserve: readonly PreservePattern[] = DEFAULT_PRESERVE,
): (text: string) => string {
  const redactor = new SyncCompositeRedactor({
    builtInRedactors: {
      digits: { enabled: false },
      zipcode: { enabled: false },
    },
    customRedactors: { before: [...BEFORE], after: [...AFTER] },
  });
  const patterns = preserve.map((p) => new RegExp(p.source, p.flags.includes('g') ? p.flags : `${p.flags}g`));
  return (text: string): string => {
    if (text.length === 0) return text;
    const kept: string[] = [];
    let shielded = text;
    for (const pattern of patterns) {
      shielded = shielded.replace(pattern, (match) => {
        kept.push(match);
        return PLACEHOLDER_OPEN + encodeIndex(kept.length - 1) + PLACEHOLDER_CLOSE;
      });
    }
    const redacted = redactor.redact(shielded);
    if (kept.length === 0) return redacted;
    return redacted.replace(PLACEHOLDER, (_match, letters: string) => kept[decodeIndex(letters)] ?? '');
  };
}
