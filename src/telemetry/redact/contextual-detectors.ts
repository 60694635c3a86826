import { isBirthDateLike, isIsbn, isPlausibleDate, monthOf } from './checks.js';
import {
  type Detector,
  dateFinding,
  group,
  LABEL,
  MONTH_WORD,
  phone,
  re,
  STREET_SUFFIX,
  US_STATES,
  whole,
  yearAt,
} from './detector.js';

/** Identifiers support searches for: claimed as kept, so the fuzzier rules below never touch them. */
export const IDENTIFIERS: readonly Detector[] = [
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
export const CONTEXTUAL: readonly Detector[] = [
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
