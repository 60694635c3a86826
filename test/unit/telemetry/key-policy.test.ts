import { describe, expect, it } from 'vitest';
import { deriveKey } from '../../../src/contract/derive-key.js';
import { keyAttributes } from '../../../src/telemetry/key-attributes.js';
import { hashKey } from '../../../src/telemetry/key-hash.js';
import { isRawSafeKey } from '../../../src/telemetry/key-policy.js';
import { createRedactor } from '../../../src/telemetry/redact/default-redactor.js';
import { ATTR } from '../../../src/telemetry/vocabulary.js';

const redactor = createRedactor();
const scrub = (text: string) => redactor.redactText(text);

describe('which keys are emitted raw', () => {
  it.each([
    deriveKey({ runId: 'run-1', toolCallId: 'call_1' }),
    '550e8400-e29b-41d4-a716-446655440000',
    '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    'req_8FjK2mNq9XzP4wLs',
    'inv-req-1',
    'otel-intent-00001',
    'order-1796108588731',
  ])('%s is raw', (key) => {
    expect(isRawSafeKey(key, scrub)).toBe(true);
  });

  it.each([
    'refund-for-Priya-Raman',
    'invoice:josé@example.com',
    'pay-4111.1111.1111.1111',
    'customer:lena@example.com',
    'refund-for-priya',
    'dob-1984-07-19',
    'call 020 7946 0958',
    'Иван-Петров-1',
  ])('%s is hashed', (key) => {
    expect(isRawSafeKey(key, scrub)).toBe(false);
  });
});

describe('keyAttributes', () => {
  it('puts a deriveKey key raw on the span with no secret configured', () => {
    const key = deriveKey({ runId: 'r', toolCallId: 'c' });
    expect(keyAttributes(key, 'auto', 'process-secret', redactor)).toEqual({ [ATTR.IDEMPOTENCY_KEY]: key });
  });

  it('hashes every other key under the secret', () => {
    expect(keyAttributes('refund-for-Priya-Raman', 'auto', 's', redactor)).toEqual({
      [ATTR.IDEMPOTENCY_KEY_HASH]: hashKey('refund-for-Priya-Raman', 's'),
    });
  });

  it('never scrubs or hashes a key the ledger refuses (1 MB), and answers at once', () => {
    const started = performance.now();
    expect(keyAttributes('k'.repeat(1_000_000), 'auto', 's', redactor)).toEqual({});
    expect(keyAttributes('bad\u0000key', 'auto', 's', redactor)).toEqual({});
    // Not a timing threshold: a record of what the check costs, for the reader of a failing run.
    console.info(`1 MB key judged in ${(performance.now() - started).toFixed(2)} ms`);
  });
});
