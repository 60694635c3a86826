import {
  isBirthDateLike,
  isCardNumber,
  isChineseId,
  isFrenchNir,
  isIban,
  isIp,
  isIsbn,
  isPlausibleDate,
  isSpanishId,
  luhn,
  monthOf,
} from './checks.js';
import { isSensitiveField } from './field-rules.js';

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

const whole =
  (label: Label, check: (text: string) => boolean = () => true) =>
  (match: RegExpExecArray): readonly Finding[] =>
    check(match[0]) ? [{ start: match.index, end: match.index + match[0].length, label }] : [];

const group =
  (index: number, label: Label, check: (match: RegExpExecArray) => boolean = () => true) =>
  (match: RegExpExecArray): readonly Finding[] => {
    const span = match.indices?.[index];
    if (span === undefined || span[0] === span[1] || !check(match)) return [];
    return [{ start: span[0], end: span[1], label }];
  };

const digitsOf = (text: string) => text.replace(/\D/g, '');
const compact = (text: string) => text.replace(/[\s.-]/g, '').toUpperCase();

/**
 * Card numbers in any grouping. A run of digit groups can hold a card next to other numbers ("card 4111 1111
 * 1111 1111 exp 2031"), so every window of whole groups is tried, longest first.
 */
function cardWindows(match: RegExpExecArray): readonly Finding[] {
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
function phone(match: RegExpExecArray): readonly Finding[] {
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

const yearAt = (match: RegExpExecArray, y: number, m: number, d: number) =>
  isBirthDateLike(Number(match[y]), Number(match[m]), Number(match[d]));

function dateFinding(match: RegExpExecArray, birthLike: boolean, plausible: boolean): readonly Finding[] {
  if (!plausible) return [];
  return [{ start: match.index, end: match.index + match[0].length, label: birthLike ? LABEL.DATE : 'keep' }];
}

const MONTH_WORD = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]{0,6}\\.?';
const STREET_SUFFIX =
  'Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Boulevard|Blvd|Drive|Dr|Way|Court|Ct|Place|Pl|Terrace|Ter|Parkway|Pkwy|Square|Sq|Close|Crescent|Cres|Highway|Hwy|Row|Mews|Gardens|Grove|Hill|Circle|Cir|Trail|Trl|Alley|Plaza|Walk|Quay|Wharf|Marg|Nagar';
const US_STATES =
  'AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY';

/**
 * Words that may stand between a label and its value ("api key hex is 9f2c…", "passport number: X1234…"): a short
 * closed list, so that prose after a label ("token refresh failed: timeout") is not read as a value.
 */
const LABEL_FILLER = '(?:hex|code|number|no\\.?|nr\\.?|value|string|hash)';

// `u` for \p classes, `d` for group offsets, `g` to scan.
const re = (source: string, flags = '') => new RegExp(source, `gdu${flags}`);

/** Secrets and data whose format alone identifies them. They run first: identifiers never shield them. */
const CERTAIN: readonly Detector[] = [
  {
    name: 'private key block',
    pattern: re(
      '-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\\s]{0,16384}(?:-----END[A-Z ]{0,40}PRIVATE KEY-----)?',
    ),
    judge: whole(LABEL.SECRET),
  },
  {
    name: 'JWT',
    pattern: re('(?<![\\w-])eyJ[\\w-]{5,4096}\\.[\\w-]{5,4096}\\.[\\w-]{0,4096}'),
    judge: whole(LABEL.SECRET),
  },
  {
    name: 'bearer credentials',
    pattern: re(
      '(?<![\\p{L}\\p{N}])(?:Bearer|Basic|Digest|Token)\\s{1,4}([A-Za-z0-9\\-._~+/]{8,4096}=*)',
      'i',
    ),
    judge: group(1, LABEL.SECRET, (m) => /[\d=+/_-]/.test(m[1] ?? '') || (m[1]?.length ?? 0) >= 20),
  },
  {
    name: 'API key prefixes',
    pattern: re(
      '(?<![A-Za-z0-9-])(?:sk-(?:proj-|ant-|svcacct-|admin-)?[\\w-]{16,512}|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,256}|whsec_[A-Za-z0-9+/=]{16,128}|gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_\\w{20,255}|xox[abprs]-[\\w-]{10,255}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[\\w-]{35}|glpat-[\\w-]{20,64}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,64}|SG\\.[\\w-]{16,64}\\.[\\w-]{16,128})',
    ),
    judge: whole(LABEL.SECRET),
  },
  {
    name: 'credentials in a URL',
    pattern: re('(?<=://)[^\\s/@:]{1,256}:[^\\s/@]{1,256}(?=@)'),
    judge: whole(LABEL.SECRET),
  },
  {
    name: 'email',
    pattern: re(
      "(?<![\\p{L}\\p{N}\\p{M}._%+\\-'])[\\p{L}\\p{N}\\p{M}._%+\\-']{1,64}(?:@|%40|\\s?\\[at\\]\\s?|\\s\\(at\\)\\s)[\\p{L}\\p{N}\\p{M}-]{1,63}(?:\\.[\\p{L}\\p{N}\\p{M}-]{1,63}){1,8}",
      'i',
    ),
    judge: whole(LABEL.EMAIL, (text) => /[\p{L}\p{M}]{2,}$/u.test(text)),
  },
  {
    name: 'Postgres key detail',
    pattern: re(
      'Key \\(([^()]{1,512})\\)=\\(([^\\n]{0,4096}?)\\)(?= already exists| is not present| is still referenced|\\.|$)',
    ),
    judge: group(2, LABEL.REDACTED),
  },
  {
    name: 'Postgres failing row',
    pattern: re('Failing row contains \\(([^\\n]{0,4096})\\)'),
    judge: group(1, LABEL.REDACTED),
  },
  {
    name: 'sensitive field = value',
    // Also JSON inside a JSON string, where the quotes arrive escaped: {\"password\":\"hunter2\"}.
    pattern: re(
      '(?<![\\p{L}\\p{N}_.\\-])([\\p{L}_][\\p{L}\\p{N}_.\\-]{0,63})((?:\\\\{1,3})?["\']?\\s{0,3}[:=]\\s{0,3})(\\\\{1,3}"[^"\\n]{0,4096}?\\\\{1,3}"|"[^"\\n]{0,4096}"|\'[^\'\\n]{0,4096}\'|[^\\s&,;)}\\]"\']{1,4096})',
    ),
    judge: group(3, LABEL.REDACTED, (m) => isSensitiveField(m[1] ?? '')),
  },
  {
    name: 'sensitive name/value pair',
    // [{"name":"password","value":"hunter2"}] serialized into a string (escaped or not): the value is named by
    // the field beside it, as in the structured rule for pairs.
    pattern: re(
      '(\\\\{0,3}")(?:name|key|field|label|header|param|parameter|attribute|id)\\1\\s{0,3}:\\s{0,3}\\1([^"\\\\\\n]{1,64})\\1\\s{0,3},\\s{0,3}\\1(?:value|values|val|content|text|data)\\1\\s{0,3}:\\s{0,3}(\\1[^"\\n]{0,4096}?\\1|[^\\s,}\\]]{1,4096})',
    ),
    judge: group(3, LABEL.REDACTED, (m) => isSensitiveField(m[2] ?? '')),
  },
  {
    name: 'credential in words',
    pattern: re(
      `(?<![\\p{L}])(?:password|passphrase|passwd|pwd|passcode|pin|otp|secret|api[\\s_-]?key|access[\\s_-]?key|secret[\\s_-]?key|signing[\\s_-]?key|token)(?:\\s{1,3}${LABEL_FILLER}){0,2}(\\s{0,3}[:=]\\s{0,3}|\\s{1,3}(?:(?:is|was|of)\\s{1,3})?)([^\\s,;)]{4,512})`,
      'i',
    ),
    judge: group(2, LABEL.SECRET, (m) => {
      // "password: x", "password is x", or "api key 9f2c…": a bare value needs a digit or a symbol.
      return /[:=]|\s(?:is|was|of)\s/i.test(m[1] ?? '') || /[\d_\-+/=!@#$%^&*]/.test(m[2] ?? '');
    }),
  },
  {
    name: 'passport number',
    pattern: re(
      `(?<![\\p{L}])passport(?:\\s{1,3}${LABEL_FILLER}|\\s{0,3}#){0,2}(?:\\s{0,3}[:#=]|\\s{1,3}(?:is|was))?\\s{0,3}([A-Z0-9]{6,12})(?![\\p{L}\\p{N}])`,
      'i',
    ),
    judge: group(1, LABEL.NATIONAL_ID, (m) => /\d/.test(m[1] ?? '')),
  },
  {
    name: 'IBAN',
    pattern: re('(?<![\\p{L}\\p{N}])[A-Z]{2}\\d{2}(?: ?[A-Z0-9]){11,30}(?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.IBAN, (text) => isIban(compact(text))),
  },
  {
    name: 'card number',
    pattern: re('(?<!\\p{N})(?:\\d[ .\\-]{0,2}){12,18}\\d(?!\\p{N})'),
    judge: cardWindows,
  },
  {
    name: 'IPv4',
    pattern: re('(?<![\\p{N}.])(?:\\d{1,3}\\.){3}\\d{1,3}(?![\\p{N}]|\\.\\p{N})'),
    judge: whole(LABEL.IP, isIp),
  },
  {
    name: 'IPv6',
    pattern: re(
      '(?<![\\p{L}\\p{N}:])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|(?:\\d{1,3}\\.){3}\\d{1,3})(?:%[\\w.]{1,32})?(?![\\p{L}\\p{N}:])',
    ),
    judge: whole(LABEL.IP, isIp),
  },
  {
    name: 'US social security number',
    pattern: re('(?<![\\p{N}\\-])\\d{3}([- ])\\d{2}\\1\\d{4}(?![\\p{N}\\-])'),
    judge: whole(LABEL.NATIONAL_ID, (text) => !/^(?:000|666|9)/.test(text)),
  },
  {
    name: 'UK National Insurance number',
    pattern: re('(?<![\\p{L}\\p{N}])[A-Z]{2} ?\\d{2} ?\\d{2} ?\\d{2} ?[A-D](?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Brazilian CPF',
    pattern: re('(?<![\\p{N}.])\\d{3}\\.\\d{3}\\.\\d{3}-\\d{2}(?!\\p{N})'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Spanish DNI/NIE',
    pattern: re('(?<![\\p{L}\\p{N}])[XYZ]?\\d{7,8}-?[A-Z](?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.NATIONAL_ID, (text) => isSpanishId(compact(text))),
  },
  {
    name: 'Chinese resident id',
    pattern: re('(?<![\\p{L}\\p{N}])\\d{17}[\\dX](?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.NATIONAL_ID, isChineseId),
  },
  {
    name: 'French NIR',
    pattern: re('(?<![\\p{L}\\p{N}])[12] ?\\d{2} ?\\d{2} ?\\d{2} ?\\d{3} ?\\d{3} ?\\d{2}(?![\\p{L}\\p{N}])'),
    judge: whole(LABEL.NATIONAL_ID, (text) => isFrenchNir(digitsOf(text))),
  },
  {
    name: 'Indian Aadhaar',
    pattern: re('(?<![\\p{N}])[2-9]\\d{3} \\d{4} \\d{4}(?![\\p{N}])'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Indian PAN',
    pattern: re('(?<![\\p{L}\\p{N}])[A-Z]{3}[PCHFATBLJG][A-Z]\\d{4}[A-Z](?![\\p{L}\\p{N}])'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Italian codice fiscale',
    pattern: re('(?<![\\p{L}\\p{N}])[A-Z]{6}\\d{2}[A-EHLMPR-T]\\d{2}[A-Z]\\d{3}[A-Z](?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Canadian SIN',
    pattern: re('(?<![\\p{N}\\-])\\d{3}([ -])\\d{3}\\1\\d{3}(?![\\p{N}\\-])'),
    judge: whole(LABEL.NATIONAL_ID, (text) => luhn(digitsOf(text))),
  },
];

/** Identifiers support searches for: claimed as kept, so the fuzzier rules below never touch them. */
const IDENTIFIERS: readonly Detector[] = [
  {
    name: 'timestamp',
    pattern: re(
      '(?<!\\p{N})\\d{4}-\\d{2}-\\d{2}[T ]\\d{2}:\\d{2}(?::\\d{2}(?:[.,]\\d{1,9})?)?(?:Z|[+-]\\d{2}:?\\d{2})?(?!\\p{N})',
    ),
    judge: whole('keep'),
  },
  {
    name: 'UUID',
    pattern: re(
      '(?<![\\p{L}\\p{N}])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![\\p{L}\\p{N}])',
      'i',
    ),
    judge: whole('keep'),
  },
  {
    name: 'ISBN',
    pattern: re('(?<![\\p{N}\\-])(?:97[89]-)?\\d{1,5}-\\d{1,7}-\\d{1,7}-[\\dX](?![\\p{N}\\-])'),
    judge: whole('keep', (text) => isIsbn(text.replace(/-/g, ''))),
  },
  {
    name: 'hex digest',
    pattern: re('(?<![\\p{L}\\p{N}])(?:0x)?[0-9a-f]{16,4096}(?![\\p{L}\\p{N}])', 'i'),
    judge: whole('keep'),
  },
  {
    name: 'prefixed identifier',
    // inv_otel_1796108588799, ORD-20261201-000123, order-1796108588731, ch_3Mml…, Object.handler: a letter,
    // then parts joined by _ - or . (not ':', which joins a label to a value), with a digit or an underscore somewhere.
    pattern: re(
      '(?<![\\p{L}\\p{N}_\\-.:/@])[A-Za-z][A-Za-z0-9]{0,63}(?:[_\\-.][A-Za-z0-9]{1,64}){1,16}(?![\\p{L}\\p{N}_@]|[\\-.][\\p{L}\\p{N}])',
    ),
    judge: whole('keep', (text) => /[\d_]/.test(text) && !hasNamePart(text)),
  },
  {
    name: 'opaque token',
    // ULID, KSUID, base64url: 12+ letters and digits mixed, the form random ids take.
    pattern: re('(?<![\\p{L}\\p{N}_\\-])[A-Za-z0-9_\\-]{12,512}(?![\\p{L}\\p{N}_\\-])'),
    judge: whole('keep', (text) => /\d/.test(text) && /[A-Za-z]/.test(text)),
  },
];

/** Hooked up by the free-text redactor: true when an identifier's alphabetic part reads as a person's name. */
let hasNamePart: (text: string) => boolean = () => false;
export function setNamePartCheck(check: (text: string) => boolean): void {
  hasNamePart = check;
}

/** Rules whose matches are ambiguous: they run after identifiers are claimed. */
const CONTEXTUAL: readonly Detector[] = [
  {
    name: 'ISO date',
    pattern: re('(?<![\\p{N}\\-])(\\d{4})-(\\d{2})-(\\d{2})(?![\\p{N}])'),
    judge: (m) =>
      dateFinding(m, yearAt(m, 1, 2, 3), isPlausibleDate(Number(m[1]), Number(m[2]), Number(m[3]))),
  },
  {
    name: 'numeric date',
    pattern: re('(?<![\\p{N}./\\-])(\\d{1,2})([./\\-])(\\d{1,2})\\2(\\d{4})(?![\\p{N}])'),
    judge: (m) => {
      // Day first or month first: either reading marks it.
      const a = Number(m[1]);
      const b = Number(m[3]);
      const y = Number(m[4]);
      const plausible = isPlausibleDate(y, b, a) || isPlausibleDate(y, a, b);
      return dateFinding(m, isBirthDateLike(y, Math.min(a, b), 1), plausible);
    },
  },
  {
    name: 'year-first slash date',
    pattern: re('(?<![\\p{N}./\\-])(\\d{4})/(\\d{1,2})/(\\d{1,2})(?![\\p{N}])'),
    judge: (m) =>
      dateFinding(m, yearAt(m, 1, 2, 3), isPlausibleDate(Number(m[1]), Number(m[2]), Number(m[3]))),
  },
  {
    name: 'month-name date',
    pattern: re(
      `(?<![\\p{L}])(?:(${MONTH_WORD})\\s{1,2}(\\d{1,2})(?:st|nd|rd|th)?,?|(\\d{1,2})(?:st|nd|rd|th)?\\.?\\s{1,2}(?:of\\s{1,2})?(${MONTH_WORD}),?)\\s{1,2}(\\d{4})(?![\\p{N}])`,
      'i',
    ),
    judge: (m) => {
      const month = monthOf(m[1] ?? m[4] ?? '');
      const day = Number(m[2] ?? m[3]);
      const year = Number(m[5]);
      return dateFinding(
        m,
        isBirthDateLike(year, month, day),
        month > 0 && isPlausibleDate(year, month, day),
      );
    },
  },
  {
    name: 'phone number',
    pattern: re(
      // After an underscore only a `+` or `(` starts a number (call_+14155550132); digits there are an id's part.
      '(?<![\\p{L}\\p{N}+\\-.:/])(?<!_(?=\\d))(?:(?:\\+|00)\\d{1,3}[ .\\-]{0,2})?(?:\\(\\d{1,5}\\)[ .\\-]{0,2})?\\d{1,8}(?:[ .\\-]{1,2}\\d{1,8}){0,5}(?![\\p{N}]|[\\-.]\\p{N})',
    ),
    judge: phone,
  },
  {
    name: 'street address',
    pattern: re(
      `(?<![\\p{L}\\p{N}])\\d{1,6}[A-Za-z]?,?\\s{1,3}(?:\\p{Lu}[\\p{L}'’.\\-]{0,30}\\s{1,3}){0,4}(?:${STREET_SUFFIX})(?![\\p{L}])\\.?`,
    ),
    judge: whole(LABEL.ADDRESS),
  },
  {
    name: 'continental street',
    pattern: re(
      "(?<![\\p{L}])(?:\\p{Lu}[\\p{L}\\-]{1,40}(?:straße|strasse|str\\.|weg|gasse|platz|allee|damm|ufer|laan|straat|gracht|vej|gatan|gata|veien)\\s{1,3}\\d{1,5}[a-z]?|(?:\\d{1,5},?\\s{1,3})?(?:Rue|Calle|Avenida|Rua|Via|Viale|Piazza|Ulitsa|Avenue|Boulevard|Chemin|Carrer|Plaza)\\s{1,3}(?:(?:de|del|la|le|les|des|do|da|dos|di|du)\\s{1,3}){0,2}\\p{Lu}[\\p{L}'’\\-]{0,30}(?:\\s{1,3}\\p{Lu}[\\p{L}'’\\-]{0,30}){0,3}(?:,?\\s{1,3}\\d{1,5}[a-z]?)?)",
    ),
    judge: whole(LABEL.ADDRESS),
  },
  {
    name: 'UK postcode',
    pattern: re('(?<![\\p{L}\\p{N}])[A-Z]{1,2}\\d[A-Z\\d]? ?\\d[A-Z]{2}(?![\\p{L}\\p{N}])'),
    judge: whole(LABEL.POSTCODE),
  },
  {
    name: 'ZIP+4',
    pattern: re('(?<![\\p{L}\\p{N}\\-])\\d{5}-\\d{4}(?![\\p{N}\\-])'),
    judge: whole(LABEL.POSTCODE),
  },
  {
    name: 'US state and ZIP',
    pattern: re(`(?<![\\p{L}])(?:${US_STATES}),?\\s{1,2}(\\d{5}(?:-\\d{4})?)(?![\\p{N}])`),
    judge: group(1, LABEL.POSTCODE),
  },
  {
    name: 'postal code after its name',
    pattern: re(
      '(?<![\\p{L}])(?:zip|zipcode|zip code|postcode|postal code|plz|cep|pin code)(?:\\s{0,3}[:=]\\s{0,3}|\\s{1,3}(?:is\\s{1,3})?)([A-Z0-9][A-Z0-9 \\-]{2,8}[A-Z0-9])',
      'i',
    ),
    judge: group(1, LABEL.POSTCODE, (m) => /\d/.test(m[1] ?? '')),
  },
  {
    name: 'home directory',
    pattern: re('(?<=[/\\\\](?:home|Users|users)[/\\\\])[^/\\\\\\s:]{1,64}'),
    judge: whole(LABEL.NAME),
  },
];

export const DETECTORS: readonly Detector[] = [...CERTAIN, ...IDENTIFIERS, ...CONTEXTUAL];
