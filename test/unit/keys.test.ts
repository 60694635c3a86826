import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolLedgerError } from '../../src/contract/errors.js';
import { assertValidKey, MAX_KEY_LENGTH } from '../../src/contract/keys.js';

const printable = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 100 })
  .filter((s) => !/[\p{Cc}\u2028\u2029]/u.test(s));

describe('key rules', () => {
  it('accepts every printable key of at most 255 characters that is not only whitespace', () => {
    fc.assert(
      fc.property(printable, (key) => {
        fc.pre([...key].length <= MAX_KEY_LENGTH && key.trim().length > 0);
        expect(() => assertValidKey(key, 't')).not.toThrow();
      }),
    );
  });

  it('refuses keys made only of whitespace', () => {
    for (const key of [' ', '   ', '\u00a0', '\u3000 ']) {
      expect(() => assertValidKey(key, 't')).toThrow(/only whitespace/);
    }
  });

  it('refuses keys with a control character, wherever it is', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 0, max: 0x1f }), fc.string(), (before, code, after) => {
        const key = `${before}${String.fromCharCode(code)}${after}`;
        expect(() => assertValidKey(key, 't')).toThrow(ToolLedgerError);
      }),
    );
  });

  it('refuses over-long keys, counting characters rather than UTF-16 units', () => {
    expect(() => assertValidKey('𝄞'.repeat(255), 't')).not.toThrow();
    expect(() => assertValidKey('a'.repeat(256), 't')).toThrow(/256 characters/);
  });

  it('refuses non-strings and unpaired surrogates with KEY_INVALID', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.boolean(), fc.object(), fc.constant(null)), (key) => {
        try {
          assertValidKey(key, 't');
          expect.unreachable();
        } catch (error) {
          expect((error as ToolLedgerError).code).toBe('KEY_INVALID');
        }
      }),
    );
    expect(() => assertValidKey('ab\uD800c', 't')).toThrow(/unpaired surrogate/);
    expect(() => assertValidKey('', 't')).toThrow(/empty/);
  });
});
