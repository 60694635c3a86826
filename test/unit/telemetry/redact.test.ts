import { describe, expect, it } from 'vitest';
import { hashKey } from '../../../src/telemetry/key-hash.js';
import { createRedactor, REDACTED } from '../../../src/telemetry/redact/default-redactor.js';
import { isSensitiveField } from '../../../src/telemetry/redact/field-rules.js';

import {
  contextsOf,
  EMPTY_CORPUS,
  identifiers,
  leakedValues,
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
      for (const text of contextsOf(category, value)) {
        expect(leakedValues(redactor.redactText(text), [{ category, value }]), text).toEqual([]);
      }
    },
  );

  it.each(corpus.free_text_examples)('scrubs %s', (text) => {
    expect(leakedValues(redactor.redactText(text), corpus.values)).toEqual([]);
  });

  it.each(corpus.structured_examples)('scrubs every corpus value from %o', (example) => {
    expect(leakedValues(JSON.stringify(redactor.redactValue(example)), corpus.values)).toEqual([]);
  });
}

describe('the identifier corpus', () => {
  it('holds at least 200 formats', () => {
    expect(identifiers.length).toBeGreaterThanOrEqual(200);
  });

  it.each(identifiers)('keeps the $format $value intact', ({ value }) => {
    for (const text of [value, `id ${value} not found`, `Failed: ${value}.`]) {
      expect(redactor.redactText(text)).toBe(text);
    }
    expect(redactor.redactValue({ id: value, note: `see ${value}` })).toEqual({
      id: value,
      note: `see ${value}`,
    });
  });
});

describe('the personal-data corpus', () => {
  it('holds at least 200 values', () => {
    expect(repoCorpus.values.length).toBeGreaterThanOrEqual(200);
  });
});

describe('cost', () => {
  it('cuts text beyond maxTextLength before scrubbing and marks it', () => {
    const out = redactor.redactText(`mail lena@example.com ${'x'.repeat(10_000)}`);
    expect(out.startsWith('mail [EMAIL] ')).toBe(true);
    expect(out.endsWith('…[truncated]')).toBe(true);
    expect(out.length).toBeLessThan(4200);
  });

  it('bounds the characters one structured value scrubs', () => {
    const small = createRedactor({ maxTotalLength: 100 });
    const out = small.redactValue({ a: 'x'.repeat(80), b: 'y'.repeat(80), c: 'z' }) as Record<string, string>;
    expect(out.a).toBe('x'.repeat(80));
    // Field names count too: 100 - 'a' - 80 - 'b' leaves 18 characters of b.
    expect(out.b).toBe(`${'y'.repeat(18)}…[truncated]`);
    expect(out.c).toBeUndefined();
    expect(out['[TRUNCATED]']).toBe('[TRUNCATED]');
  });
});

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

  it('keeps extra identifiers the caller asks to preserve, never over a certain detector', () => {
    const custom = createRedactor({ preserve: [/\b\d{3} \d{3} \d{4}\b/g, /\S+@example\.com/g] });
    expect(custom.redactText('account 415 555 0132 locked')).toBe('account 415 555 0132 locked');
    expect(createRedactor().redactText('account 415 555 0132 locked')).toBe('account [PHONE] locked');
    expect(custom.redactText('mail lena@example.com')).toBe('mail [EMAIL]');
  });

  it('takes extra allowed words', () => {
    expect(createRedactor().redactText('Supabase timed out')).toBe('[NAME] timed out');
    expect(createRedactor({ allowWords: ['Supabase'] }).redactText('Supabase timed out')).toBe(
      'Supabase timed out',
    );
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
      note: 'call [PHONE]',
    });
  });

  it('scrubs object keys, survives cycles and odd values, and bounds depth', () => {
    const cyclic: Record<string, unknown> = { 'maria.gonzalez@example.com': 1, big: 10n, when: new Date(0) };
    cyclic.self = cyclic;
    const out = redactor.redactValue(cyclic) as Record<string, unknown>;
    expect(Object.keys(out)).toContain('[EMAIL]');
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

describe('labelled-only values (passwords, hex API keys, bare ZIPs, passports) and glued values', () => {
  it.each([
    ['my api key hex is 9f2c4e6a8b0d1f3e5a7c9e1b3d5f7a9c', 'my api key hex is [SECRET]'],
    ['my passport is X12345678', 'my passport is [NATIONAL_ID]'],
    ['passport number: K1234567', 'passport number: [NATIONAL_ID]'],
    [
      'Saved {\\"password\\":\\"hunter2\\",\\"zip\\":94103}',
      'Saved {\\"password\\":[REDACTED],\\"zip\\":[REDACTED]}',
    ],
    ['token refresh failed: timeout', 'token refresh failed: timeout'],
    ['call_+14155550132', 'call_[PHONE]'],
    [
      'Saved [{"key":"zip","value":"30301"},{"key":"amount","value":"12000"}]',
      'Saved [{"key":"zip","value":[REDACTED]},{"key":"amount","value":"12000"}]',
    ],
    [
      '{\\"name\\":\\"api_key\\",\\"value\\":\\"9f2c4e6a\\"}',
      '{\\"name\\":[REDACTED],\\"value\\":[REDACTED]}',
    ],
    ['call_sk-proj-Xk4Jq9Lm2Np7Rs5Tv8Wy1Za3Bc6De0Fg', 'call_[SECRET]'],
    ['Amount 12000, order 20261201', 'Amount 12000, order 20261201'],
  ])('%s', (text, expected) => {
    expect(redactor.redactText(text)).toBe(expected);
  });

  it('replaces the value of a name/value pair whose name is a sensitive field', () => {
    expect(
      redactor.redactValue({
        form: [
          { name: 'password', value: 'hunter2' },
          { key: 'billing_zip', value: '94103' },
          { key: 'amount', value: '12000' },
        ],
        billingZip: 94103,
        gzip: true,
      }),
    ).toEqual({
      form: [
        { name: REDACTED, value: REDACTED },
        { key: 'billing_zip', value: REDACTED },
        { key: 'amount', value: '12000' },
      ],
      billingZip: REDACTED,
      gzip: true,
    });
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
