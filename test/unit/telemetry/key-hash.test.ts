import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashKey, keyHasher } from '../../../src/telemetry/key-hash.js';

const reference = (key: string, secret: string) =>
  createHmac('sha256', secret).update(key, 'utf8').digest('hex');

describe('keyHasher', () => {
  it('gives the HMAC-SHA256 that createHmac gives, for any key and secret', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 200, unit: 'grapheme' }),
        fc.string({ maxLength: 300, unit: 'grapheme' }),
        (secret, key) => {
          expect(keyHasher(secret)(key)).toBe(reference(key, secret));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('gives the same hash as hashKey for secrets at and around the block size, which longer ones are hashed down to', () => {
    // 64 bytes is SHA-256's block: a secret of 65 bytes or more is replaced by its own hash (RFC 2104).
    for (const secret of [
      's',
      'x'.repeat(63),
      'x'.repeat(64),
      'x'.repeat(65),
      'é'.repeat(32),
      'é'.repeat(33),
      '🙂'.repeat(40),
    ]) {
      const hash = keyHasher(secret);
      for (const key of ['', 'order-1042', 'maria@example.com', 'ü'.repeat(500), '\u{1F600}']) {
        expect(hash(key)).toBe(hashKey(key, secret));
        expect(hash(key)).toBe(reference(key, secret));
      }
    }
  });

  it('refuses a non-string key and an empty secret as hashKey does', () => {
    expect(() => keyHasher('')('k')).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(() => keyHasher('s')(42 as unknown as string)).toThrow(
      expect.objectContaining({ code: 'KEY_INVALID' }),
    );
  });
});
