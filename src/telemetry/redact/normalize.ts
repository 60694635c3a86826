/**
 * A copy of a text for detection, the same length as the original so that a match's offsets apply to both:
 * fullwidth forms become ASCII (`４１１１`, `＠`) and decimal digits of every script become 0-9 (`٤١١١`, `४१११`),
 * so patterns written for ASCII see numbers and addresses however they were typed. Only one-unit (BMP)
 * characters are mapped; the rest are left as they are.
 */
export function detectionCopy(text: string): string {
  let out: string[] | undefined;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    const mapped = mapUnit(code);
    if (mapped === undefined) continue;
    out ??= text.split('');
    out[i] = mapped;
  }
  return out === undefined ? text : out.join('');
}

/** First code point (the zero) of each script's run of ten decimal digits in the BMP. */
const DIGIT_ZEROS = [
  0x0660, 0x06f0, 0x07c0, 0x0966, 0x09e6, 0x0a66, 0x0ae6, 0x0b66, 0x0be6, 0x0c66, 0x0ce6, 0x0d66, 0x0de6,
  0x0e50, 0x0ed0, 0x0f20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90, 0x1b50, 0x1bb0,
  0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0,
];

function mapUnit(code: number): string | undefined {
  // Fullwidth ASCII variants (U+FF01..U+FF5E) and the ideographic space.
  if (code >= 0xff01 && code <= 0xff5e) return String.fromCharCode(code - 0xfee0);
  if (code === 0x3000 || code === 0x00a0 || code === 0x202f || (code >= 0x2000 && code <= 0x200a)) return ' ';
  // Dashes a phone number or card may be typed with.
  if (code >= 0x2010 && code <= 0x2015) return '-';
  for (const zero of DIGIT_ZEROS) {
    if (code >= zero && code < zero + 10) return String.fromCharCode(48 + code - zero);
  }
  return undefined;
}
