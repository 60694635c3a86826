import { isBirthDateLike, isCardNumber } from './checks.js';

/** What a detector puts in place of what it found; `keep` marks an identifier later detectors must not touch. */
export const LABEL = {
  EMAIL: '[EMAIL]',
  PHONE: '[PHONE]',
  CARD: '[CARD]',
  IBAN: '[IBAN]',
  IP: '[IP]',
  SECRET: '[SECRET]',
  NATIONAL_ID: '[NATIONAL_ID]',
  DATE: '[DATE]',
  ADDRESS: '[ADDRESS]',
  POSTCODE: '[POSTCODE]',
  NAME: '[NAME]',
  REDACTED: '[REDACTED]',
} as const;

export type Label = (typeof LABEL)[keyof typeof LABEL] | 'keep';

/** The part of a match to act on: [start, end) offsets into the text, and what to do with it. */
export interface Finding {
  readonly start: number;
  readonly end: number;
  readonly label: Label;
}

/**
 * One detection rule. Every pattern is written to run in time linear in its input: it can only start where a
 * lookbehind says a token starts (so a long run is entered once, not at each of its characters), and every
 * repeat inside it is bounded. `judge` sees the match (with group indices) and returns what to replace, so
 * checksums and date rules decide, not the pattern alone.
 */
export interface Detector {
  readonly name: string;
  readonly pattern: RegExp;
  judge(match: RegExpExecArray): readonly Finding[];
}

export const whole =
  (label: Label, check: (text: string) => boolean = () => true) =>
  (match: RegExpExecArray): readonly Finding[] =>
    check(match[0]) ? [{ start: match.index, end: match.index + match[0].length, label }] : [];

export const group =
  (index: number, label: Label, check: (match: RegExpExecArray) => boolean = () => true) =>
  (match: RegExpExecArray): readonly Finding[] => {
    const span = match.indices?.[index];
    if (span === undefined || span[0] === span[1] || !check(match)) return [];
    return [{ start: span[0], end: span[1], label }];
  };

export const digitsOf = (text: string) => text.replace(/\D/g, '');
export const compact = (text: string) => text.replace(/[\s.-]/g, '').toUpperCase();

/**
 * Card numbers in any grouping. A run of digit groups can hold a card next to other numbers ("card 4111 1111
 * 1111 1111 exp 2031"), so every window of whole groups is tried, longest first.
 */
export function cardWindows(match: RegExpExecArray): readonly Finding[] {
  const starts: number[] = [];
  const ends: number[] = [];
  // offsets[i]: digits before group i in `all`, so a window's digits are one slice.
  const offsets: number[] = [0];
  let all = '';
  for (const g of match[0].matchAll(/\d+/g)) {
    starts.push(match.index + g.index);
    ends.push(match.index + g.index + g[0].length);
    all += g[0];
    offsets.push(all.length);
  }
  const found: Finding[] = [];
  for (let from = 0; from < starts.length; from++) {
    for (let to = starts.length; to > from; to--) {
      const length = offsets[to]! - offsets[from]!;
      if (length > 19) continue;
      if (length < 13) break;
      if (isCardNumber(all.slice(offsets[from], offsets[to]))) {
        found.push({ start: starts[from]!, end: ends[to - 1]!, label: LABEL.CARD });
        from = to - 1;
        break;
      }
    }
  }
  return found;
}

/** Formatted phone numbers: 7-15 digits with a country prefix, an area code in brackets, or two separators. */
export function phone(match: RegExpExecArray): readonly Finding[] {
  const text = match[0];
  const digits = digitsOf(text);
  if (digits.length < 7 || digits.length > 15) return [];
  const groups = text.split(/[^\d]+/).filter((g) => g.length > 0);
  // Thousands grouping (1 000 000, 12.500.000) is an amount, not a number to call.
  if (groups.length > 1 && /^\d{1,3}$/.test(groups[0] ?? '') && groups.slice(1).every((g) => g.length === 3))
    return [];
  const international = /^(?:\+|00)/.test(text);
  const bracketed = text.includes('(');
  if (
    !international &&
    !bracketed &&
    groups.length < 3 &&
    !(groups.length === 2 && digits.length >= 7 && /^0/.test(text))
  )
    return [];
  return [{ start: match.index, end: match.index + text.length, label: LABEL.PHONE }];
}

export const yearAt = (match: RegExpExecArray, y: number, m: number, d: number) =>
  isBirthDateLike(Number(match[y]), Number(match[m]), Number(match[d]));

export function dateFinding(
  match: RegExpExecArray,
  birthLike: boolean,
  plausible: boolean,
): readonly Finding[] {
  if (!plausible) return [];
  return [{ start: match.index, end: match.index + match[0].length, label: birthLike ? LABEL.DATE : 'keep' }];
}

export const MONTH_WORD = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]{0,6}\\.?';
export const STREET_SUFFIX =
  'Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Boulevard|Blvd|Drive|Dr|Way|Court|Ct|Place|Pl|Terrace|Ter|Parkway|Pkwy|Square|Sq|Close|Crescent|Cres|Highway|Hwy|Row|Mews|Gardens|Grove|Hill|Circle|Cir|Trail|Trl|Alley|Plaza|Walk|Quay|Wharf|Marg|Nagar';
export const US_STATES =
  'AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY';

/**
 * Words that may stand between a label and its value ("api key hex is 9f2c…", "passport number: X1234…"): a short
 * closed list, so that prose after a label ("token refresh failed: timeout") is not read as a value.
 */
export const LABEL_FILLER = '(?:hex|code|number|no\\.?|nr\\.?|value|string|hash)';

// `u` for \p classes, `d` for group offsets, `g` to scan.
export const re = (source: string, flags = '') => new RegExp(source, `gdu${flags}`);
