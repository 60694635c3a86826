/**
 * A copy of a text for detection: fullwidth forms become ASCII (`４１１１`, `＠`) and decimal digits of every
 * script (Unicode `\p{Nd}`: `٤١١١`, `۴۱۱۱`, `४१११`, and those outside the BMP such as `𝟒𝟏𝟏𝟏` or Adlam's) become
 * 0-9, so patterns written for ASCII see numbers and addresses however they were typed.
 *
 * A BMP character maps to one ASCII unit in place. A digit outside the BMP is two UTF-16 units and maps to one
 * ASCII digit, so the copy is then shorter than the text: `origin` gives, for each offset of the copy (and its
 * end), the offset in the text, so a match's offsets still apply to the original. Without such digits the copy
 * has the text's offsets and `origin` is undefined.
 */
export interface DetectionView {
  readonly text: string;
  readonly origin: Int32Array | undefined;
}

export function detectionView(text: string): DetectionView {
  let out: string[] | undefined;
  let origin: number[] | undefined;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) {
      if (out !== undefined) {
        out.push(text[i] as string);
        origin?.push(i);
      }
      continue;
    }
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const point = text.codePointAt(i) as number;
      const value = digitValue(point);
      if (value !== undefined) {
        out ??= text.slice(0, i).split('');
        origin ??= Array.from({ length: i }, (_, k) => k);
        out.push(String.fromCharCode(48 + value));
        origin.push(i);
        i++;
        continue;
      }
    }
    const mapped = mapUnit(code);
    if (mapped === undefined && out === undefined) continue;
    out ??= text.slice(0, i).split('');
    out.push(mapped ?? (text[i] as string));
    origin?.push(i);
  }
  if (out === undefined) return { text, origin: undefined };
  if (origin === undefined) return { text: out.join(''), origin: undefined };
  origin.push(text.length);
  return { text: out.join(''), origin: Int32Array.from(origin) };
}

const DECIMAL_DIGIT = /\p{Nd}/u;
// Unicode puts each script's digits in a run of ten, zero first, and runs of ten back to back (the mathematical
// digits are five such runs): a digit's value is its distance from the run's start, modulo ten.
const LONGEST_RUN = 60;
const MAX_REMEMBERED = 4096;
const remembered = new Map<number, number | undefined>();

/** The value 0-9 of a decimal digit of any script, or undefined for anything else. */
export function digitValue(point: number): number | undefined {
  if (point >= 0x30 && point <= 0x39) return point - 0x30;
  if (remembered.has(point)) return remembered.get(point);
  let value: number | undefined;
  if (DECIMAL_DIGIT.test(String.fromCodePoint(point))) {
    let start = point;
    for (let steps = 0; steps < LONGEST_RUN && DECIMAL_DIGIT.test(String.fromCodePoint(start - 1)); steps++) {
      start--;
    }
    value = (point - start) % 10;
  }
  // Bounded: a hostile text could hold every non-digit of the BMP.
  if (remembered.size < MAX_REMEMBERED) remembered.set(point, value);
  return value;
}

function mapUnit(code: number): string | undefined {
  // Fullwidth ASCII variants (U+FF01..U+FF5E) and the ideographic space.
  if (code >= 0xff01 && code <= 0xff5e) return String.fromCharCode(code - 0xfee0);
  if (code === 0x3000 || code === 0x00a0 || code === 0x202f || (code >= 0x2000 && code <= 0x200a)) return ' ';
  // Dashes a phone number or card may be typed with.
  if (code >= 0x2010 && code <= 0x2015) return '-';
  // Lone surrogates are no digit; every other BMP unit is checked against \p{Nd}.
  if (code >= 0xd800 && code <= 0xdfff) return undefined;
  const value = digitValue(code);
  return value === undefined ? undefined : String.fromCharCode(48 + value);
}
