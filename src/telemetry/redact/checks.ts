import { isIPv4, isIPv6 } from 'node:net';

/** Checks the detectors run on a candidate before replacing it, so that look-alike identifiers survive. */

export function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** Issuer prefixes of the card networks (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro). */
const CARD_PREFIX =
  /^(?:4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|6(?:011|5|4[4-9]|2)|35(?:2[89]|[3-8])|3(?:0[0-5]|[689])|5[06-9]|6[0-9])/;

export function isCardNumber(digits: string): boolean {
  return digits.length >= 13 && digits.length <= 19 && CARD_PREFIX.test(digits) && luhn(digits);
}

/** ISO 13616 mod-97 check of an IBAN (spaces removed, upper case). */
export function isIban(compact: string): boolean {
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(compact)) return false;
  const rearranged = compact.slice(4) + compact.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const code = char.charCodeAt(0);
    const value = code >= 65 ? String(code - 55) : char;
    for (const digit of value) remainder = (remainder * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return remainder === 1;
}

export function isIp(candidate: string): boolean {
  if (isIPv4(candidate)) return true;
  const address = candidate.split('%')[0] ?? '';
  if (!isIPv6(address)) return false;
  // Eight groups, or a '::' with at least some hex on either side: not a C++ scope or a bare '::'.
  return (address.match(/[0-9a-f]/gi)?.length ?? 0) >= 2;
}

const DNI_LETTERS = 'TRWAGMYFPDXBNJZSQVHLCKE';

/** Spanish DNI / NIE: eight digits (or X/Y/Z and seven) and a check letter. */
export function isSpanishId(compact: string): boolean {
  const match = /^([XYZ]?)(\d{7,8})([A-Z])$/.exec(compact);
  if (!match) return false;
  const prefix = match[1] === '' ? '' : String('XYZ'.indexOf(match[1] ?? ''));
  const number = Number(prefix + (match[2] ?? ''));
  return (
    (prefix === '' ? match[2]?.length === 8 : match[2]?.length === 7) && DNI_LETTERS[number % 23] === match[3]
  );
}

/** Chinese resident identity number: region, birth date, sequence and an ISO 7064 mod 11-2 check character. */
export function isChineseId(compact: string): boolean {
  if (!/^\d{17}[\dX]$/i.test(compact)) return false;
  if (
    !isPlausibleDate(
      Number(compact.slice(6, 10)),
      Number(compact.slice(10, 12)),
      Number(compact.slice(12, 14)),
    )
  )
    return false;
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += (compact.charCodeAt(i) - 48) * (2 ** (17 - i) % 11);
  return '10X98765432'[sum % 11] === compact[17]?.toUpperCase();
}

/** French social security number (NIR): 13 digits and a 97-complement key. */
export function isFrenchNir(digits: string): boolean {
  if (!/^[12]\d{14}$/.test(digits)) return false;
  return 97 - Number(BigInt(digits.slice(0, 13)) % 97n) === Number(digits.slice(13));
}

export function isPlausibleDate(year: number, month: number, day: number): boolean {
  return year >= 1900 && year <= 2100 && month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

/**
 * A calendar date old enough to be someone's date of birth (ten years or more before now). Newer and future
 * dates, such as due dates or delivery dates, are kept: the trade-off is documented in docs/telemetry.md.
 */
export function isBirthDateLike(year: number, month: number, day: number, now = new Date()): boolean {
  return isPlausibleDate(year, month, day) && year <= now.getUTCFullYear() - 10;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] as const;
const MONTH_NAMES = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
] as const;

/** 1-12 for an English month name or its abbreviation (`Jul`, `Sept.`, `July`), 0 otherwise. */
export function monthOf(word: string): number {
  const w = word.toLowerCase().replace(/\.$/, '');
  const index = MONTHS.findIndex((m, i) => MONTH_NAMES[i] === w || m === w || (w === 'sept' && m === 'sep'));
  return index + 1;
}

/** ISBN-10 (mod 11, X = 10) or ISBN-13 (EAN mod 10) check digit. */
export function isIsbn(compactIsbn: string): boolean {
  if (/^\d{9}[\dX]$/.test(compactIsbn)) {
    let sum = 0;
    for (let i = 0; i < 10; i++) {
      const c = compactIsbn[i]!;
      sum += (c === 'X' ? 10 : Number(c)) * (10 - i);
    }
    return sum % 11 === 0;
  }
  if (/^97[89]\d{10}$/.test(compactIsbn)) {
    let sum = 0;
    for (let i = 0; i < 13; i++) sum += Number(compactIsbn[i]) * (i % 2 === 0 ? 1 : 3);
    return sum % 10 === 0;
  }
  return false;
}
