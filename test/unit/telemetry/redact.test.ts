import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { hashKey } from '../../../src/telemetry/key-hash.js';
import { createRedactor, REDACTED } from '../../../src/telemetry/redact/default-redactor.js';
import { isSensitiveField } from '../../../src/telemetry/redact/field-rules.js';

import {
  EMPTY_CORPUS,
  type PiiCorpus,
  corpus as repoCorpus,
  SHARED_CORPUS_SUITE,
  sharedCorpus,
} from '../../support/pii-corpus.js';

const redactor = createRedactor();

function corpusSuite(corpus: PiiCorpus): void {
  it.each(corpus.values)(
    'removes the $category $value, bare and inside a sentence',
    ({ category, value }) => {
      for (const text of [
        value,
        `${category.replace(/_/g, ' ')} ${value}`,
        `Refund failed (${value}); retry later`,
      ]) {
        expect(redactor.redactText(text)).not.toContain(value);
      }
    },
  );

  it.each(corpus.free_text_examples)('scrubs %s', (text) => {
    const scrubbed = redactor.redactText(text);
    for (const { value } of corpus.values) expect(scrubbed).not.toContain(value);
  });

  it.each(corpus.structured_examples)('scrubs every corpus value from %o', (example) => {
    const json = JSON.stringify(redactor.redactValue(example));
    for (const { value } of corpus.values) expect(json).not.toContain(value);
  });
}

describe('the in-repo corpus', () => corpusSuite(repoCorpus));

describe.skipIf(sharedCorpus === undefined)(SHARED_CORPUS_SUITE, () =>
  corpusSuite(sharedCorpus ?? EMPTY_CORPUS),
);

describe('free text', () => {
  it.each([
    'inv_2024_0042',
    'ord-2024-0042',
    'INV-2024-000123',
    'job-12345',
    'cus_9f8e7d6c',
    '550e8400-e29b-41d4-a716-446655440000',
    'Invoice inv_2024_0042 for tenant acme will be retried at 2026-11-30T00:14:01Z',
    "Cannot read properties of undefined (reading 'amount')",
  ])('keeps the identifier text %s intact', (text) => {
    expect(redactor.redactText(text)).toBe(text);
  });

  it('keeps extra identifiers the caller asks to preserve', () => {
    const custom = createRedactor({ preserve: [/\bACCT\d{10}\b/g] });
    expect(custom.redactText('account ACCT4155550132 locked')).toBe('account ACCT4155550132 locked');
    expect(createRedactor().redactText('account ACCT4155550132 locked')).not.toContain('4155550132');
  });
});

describe('structured values', () => {
  it('replaces sensitive fields whole and keeps the rest', () => {
    expect(
      redactor.redactValue({
        invoiceId: 'inv_2024_0042',
        amount_cents: 4500,
        customer: { firstName: 'Ada', Email_Address: 'x', tags: ['vip'] },
        fileName: 'report.pdf',
        note: 'call 415-555-0199',
      }),
    ).toEqual({
      invoiceId: 'inv_2024_0042',
      amount_cents: 4500,
      customer: { firstName: REDACTED, Email_Address: REDACTED, tags: ['vip'] },
      fileName: 'report.pdf',
      note: 'call PHONE_NUMBER',
    });
  });

  it('scrubs object keys, survives cycles and odd values, and bounds depth', () => {
    const cyclic: Record<string, unknown> = { 'maria.gonzalez@example.com': 1, big: 10n, when: new Date(0) };
    cyclic.self = cyclic;
    const out = redactor.redactValue(cyclic) as Record<string, unknown>;
    expect(Object.keys(out)).toContain('EMAIL_ADDRESS');
    expect(out.self).toBe('[CIRCULAR]');
    expect(out.big).toBe('10');
    let deep: unknown = 'leaf';
    for (let i = 0; i < 20; i++) deep = { child: deep };
    expect(JSON.stringify(redactor.redactValue(deep))).toContain('[TRUNCATED]');
  });

  it.each([
    ['email', true],
    ['customerEmail', true],
    ['first_name', true],
    ['billing-address', true],
    ['card_number', true],
    ['Authorization', true],
    ['api_key', true],
    ['date_of_birth', true],
    ['tool_name', false],
    ['fileName', false],
    ['amount_cents', false],
    ['currency', false],
    ['invoice_id', false],
  ])('field %s is sensitive: %s', (field, sensitive) => {
    expect(isSensitiveField(field)).toBe(sensitive);
  });

  it('takes extra sensitive field names', () => {
    expect(createRedactor({ sensitiveFields: ['loyalty_no'] }).redactValue({ loyaltyNo: 'L-1' })).toEqual({
      loyaltyNo: REDACTED,
    });
  });
});

describe('redact-pii', () => {
  it('is used through its local rules only: the Google Cloud DLP client is never loaded', () => {
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    expect(loaded.some((file) => file.includes('/redact-pii/'))).toBe(true);
    expect(loaded.filter((file) => file.includes('@google-cloud') || file.includes('google-gax'))).toEqual(
      [],
    );
  });
});

describe('hashKey', () => {
  it('is HMAC-SHA256 in lowercase hex (RFC 4231 test case 2)', () => {
    expect(hashKey('what do ya want for nothing?', 'Jefe')).toBe(
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
  });

  it('refuses an empty secret with a message saying what to set', () => {
    expect(() => hashKey('k', '')).toThrow(/TOOL_LEDGER_KEY_HASH_SECRET/);
    expect(() => hashKey('k', '')).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });
});
