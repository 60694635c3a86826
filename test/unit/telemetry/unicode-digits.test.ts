import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/telemetry/redact/default-redactor.js';
import { detectionView, digitValue } from '../../../src/telemetry/redact/normalize.js';
import { contextsOf, corpus } from '../../support/pii-corpus.js';

/**
 * Issue 26: digits of every Unicode script (`\p{Nd}`) count as digits for phone, card and id detection, in the
 * BMP (Arabic-Indic, Extended Arabic-Indic, Devanagari, fullwidth, …) and outside it (mathematical digits, Adlam,
 * Osmanya, …, two UTF-16 units each).
 */

const DECIMAL = /^\p{Nd}$/u;

/** The first digit (zero) of every run of ten `\p{Nd}` code points this engine knows, ASCII excluded. */
const ZEROS: number[] = (() => {
  const zeros: number[] = [];
  for (let point = 0x80; point < 0x110000; point++) {
    if (
      DECIMAL.test(String.fromCodePoint(point)) &&
      (zeros.length === 0 || point >= (zeros.at(-1) ?? 0) + 10)
    ) {
      zeros.push(point);
    }
  }
  return zeros;
})();

const inScript = (text: string, zeroOf: (index: number) => number): string => {
  let index = 0;
  return text.replace(/[0-9]/g, (d) => String.fromCodePoint(zeroOf(index++) + Number(d)));
};

const redactor = createRedactor();
const DIGIT_CATEGORIES = new Set(['phone', 'credit_card', 'national_id']);
const asciiValues = corpus.values
  .filter(({ category, value }) => DIGIT_CATEGORIES.has(category) && /^[\x20-\x7e]+$/.test(value))
  .filter(({ value }) => /\d/.test(value));

describe('decimal digits of every script', () => {
  it('knows every \\p{Nd} code point, with the value the engine formats it with', () => {
    expect(ZEROS.length).toBeGreaterThan(60);
    for (const zero of ZEROS) {
      for (let d = 0; d < 10; d++) expect(digitValue(zero + d), zero.toString(16)).toBe(d);
    }
    // An independent oracle: Intl formats 0-9 in each numbering system it supports.
    let checked = 0;
    for (const system of Intl.supportedValuesOf('numberingSystem')) {
      const digits = [
        ...new Intl.NumberFormat(`en-u-nu-${system}`, { useGrouping: false }).format(1234567890),
      ];
      if (digits.length !== 10 || !digits.every((c) => DECIMAL.test(c))) continue;
      for (const [i, c] of digits.entries())
        expect(digitValue(c.codePointAt(0) ?? 0), system).toBe((i + 1) % 10);
      checked++;
    }
    expect(checked).toBeGreaterThan(40);
    for (const notDigit of ['a', 'ⅷ', '½', '²', '①', '\ud835', '漢']) {
      expect(digitValue(notDigit.codePointAt(0) ?? 0), notDigit).toBeUndefined();
    }
  });

  it('maps them to ASCII in the detection copy, with offsets back into the text', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom(...ZEROS), fc.constant(0x30)), { minLength: 1, maxLength: 12 }),
        fc.string({ maxLength: 8 }),
        (zeros, tail) => {
          const ascii = `no ${'0123456789'.slice(0, zeros.length)} ${tail.replace(/[\ud800-\udfff]/g, '')}`;
          const text = inScript(ascii, (i) => zeros[i % zeros.length] ?? 0x30);
          const view = detectionView(text);
          expect(view.text.replace(/[^ -~]/g, '?').slice(0, ascii.indexOf(' ', 3))).toBe(
            ascii.slice(0, ascii.indexOf(' ', 3)),
          );
          if (view.origin !== undefined) {
            expect(view.origin.length).toBe(view.text.length + 1);
            expect(view.origin.at(-1)).toBe(text.length);
          } else {
            expect(view.text.length).toBe(text.length);
          }
        },
      ),
    );
  });

  it.each(asciiValues.map(({ category, value }) => [category, value]))(
    'scrubs %s %s written in any script, or several, as it scrubs it in ASCII',
    (category, value) => {
      for (const text of contextsOf(category, value)) {
        const expected = redactor.redactText(text);
        expect(expected, text).not.toContain(value);
        fc.assert(
          fc.property(fc.array(fc.constantFrom(...ZEROS), { minLength: 1, maxLength: 4 }), (zeros) => {
            // One script for the whole number, or digits mixed from several.
            const scripted = inScript(text, (i) => zeros[i % zeros.length] ?? 0x30);
            expect(redactor.redactText(scripted)).toBe(
              inScript(expected, (i) => zeros[i % zeros.length] ?? 0x30),
            );
          }),
          { numRuns: 25 },
        );
      }
    },
  );

  it('the cases from the issue: Arabic-Indic, Extended Arabic-Indic, Devanagari, fullwidth and mathematical digits', () => {
    for (const [text, label] of [
      ['call +١ ٤١٥ ٥٥٥ ٠١٩٩ today', '[PHONE]'],
      ['call ۰۲۰ ۷۹۴۶ ۰۹۵۸ today', '[PHONE]'],
      ['card ४१११ ११११ ११११ ११११ ok', '[CARD]'],
      ['card ４２４２ ４２４２ ４２４２ ４２４２ ok', '[CARD]'],
      ['ssn 𝟏𝟐𝟑-𝟒𝟓-𝟔𝟕𝟖𝟗 ok', '[NATIONAL_ID]'],
      ['phone (𞥔𞥑𞥕) 𞥕𞥕𞥕-𞥐𞥑𞥙𞥙 ok', '[PHONE]'],
    ] as const) {
      const out = redactor.redactText(text);
      expect(out, text).toContain(label);
      expect(out).toMatch(/ (?:today|ok)$/);
    }
  });
});
