import { PGlite } from '@electric-sql/pglite';
import { z } from 'zod';
import { createLedger, hashKey, ToolFailure } from '../../src/index.js';
import { ATTR } from '../../src/telemetry/vocabulary.js';
import { labelOf, type PiiCorpus } from './pii-corpus.js';
import { TelemetryHarness } from './telemetry-harness.js';

/**
 * The per-signal precision/recall harness of issue 11: every personal-data value and every identifier goes
 * through real ledger calls (PGlite, the real OpenTelemetry SDK with in-memory exporters), as structured fields
 * and inside free text, and each exported signal is searched for what leaked and what was altered. Used by
 * `npm run report:pii` (every value) and by test/db/telemetry/pii-report.test.ts (a sample).
 */

export const SIGNALS = ['spans', 'span events', 'log bodies', 'log attributes', 'metric attributes'] as const;
export type Signal = (typeof SIGNALS)[number];

export interface HarnessInput {
  readonly values: PiiCorpus['values'];
  readonly identifiers: readonly { readonly format: string; readonly value: string }[];
  readonly captureContent: boolean;
}

export interface SignalFigures {
  /** Corpus values (and the JWTs and bearer tokens made from them) found in this signal. */
  readonly leaked: string[];
  /** For each leaked value, the start of an exported string it was found in. */
  readonly where: string[];
  /** Identifiers that did not come out of this signal exactly as they went in (undefined: none put there). */
  readonly altered: string[] | undefined;
}

export interface HarnessResult {
  readonly calls: number;
  readonly checked: number;
  readonly identifiers: number;
  readonly signals: Readonly<Record<Signal, SignalFigures>>;
}

const SECRET = 'pii-harness-secret';

const base64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

/** An unsigned-looking JWT whose claims hold the value, as an identity provider would issue it. */
function jwtFor(value: string, i: number): string {
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const claims = base64url(JSON.stringify({ sub: value, iat: 1_767_225_600 + i }));
  return `${header}.${claims}.${base64url(`signature-${i}-${value}`).slice(0, 43)}`;
}

const bearerFor = (i: number) => `tlb${(i * 7919 + 104_729).toString(36)}Zq8x${i}Km3P0wLs7`;

/** The value as it stands in prose: with its label when only the label makes it recognisable. */
function inText(category: string, value: string): string {
  const label = labelOf(category);
  return label === undefined ? value : `${label} ${value}`;
}

// A column per category, so a unique violation reports `Key (email)=(…) already exists` as Postgres writes it.
const column = (category: string) => category.replace(/[^a-z0-9_]/gi, '_').toLowerCase();

function stringsOf(attributes: Readonly<Record<string, unknown>> | undefined): string[] {
  const out: string[] = [];
  for (const value of Object.values(attributes ?? {})) {
    if (Array.isArray(value)) for (const item of value) out.push(String(item));
    else if (value !== undefined && value !== null) out.push(String(value));
  }
  return out;
}

export async function runPiiHarness(input: HarnessInput): Promise<HarnessResult> {
  const telemetry = new TelemetryHarness();
  const db = new PGlite();
  const categories = [...new Set(input.values.map((v) => column(v.category)))];
  await db.exec(
    `CREATE SCHEMA app; CREATE TABLE app.customers (id serial PRIMARY KEY, ${categories
      .map((c) => `${c} text UNIQUE`)
      .join(', ')})`,
  );
  const ledger = await createLedger({
    pglite: db as never,
    schema: 'pii_harness',
    telemetry: {
      ...telemetry.providers(),
      captureContent: input.captureContent,
      keyHashSecret: SECRET,
      metricTenants: ['acme'],
    },
  });
  let calls = 0;
  const settle = async (p: Promise<unknown>) => {
    calls++;
    await p.catch(() => undefined);
  };

  const update = ledger.tool({
    name: 'update_customer',
    kind: 'mutation',
    handler: (args: unknown) => ({
      saved: args,
      note: `Saved ${JSON.stringify(args)}`,
      envelope: JSON.stringify({ body: JSON.stringify(args) }),
      id: 'inv_2024_0042',
    }),
  });
  const lookup = ledger.tool({
    name: 'find_customer',
    kind: 'read',
    handler: (args: unknown) => ({ found: args }),
  });
  const charge = ledger.tool({
    name: 'charge_customer',
    kind: 'mutation',
    isFinalError: (error) => error instanceof ToolFailure,
    handler: async (args: unknown) => {
      // The value travels under its category's field name, as a form would send it
      const { form, text, column: field = '', token } = args as Record<string, string>;
      const value = (args as Record<string, string>)[field];
      switch (form) {
        case 'cause':
          throw new Error(`charge failed for ${text}`, { cause: new Error(`upstream said: ${text}`) });
        case 'final':
          throw new ToolFailure(`card declined for ${text}`, { details: { text } });
        case 'postgres': {
          const sql = `INSERT INTO app.customers (${column(field)}) VALUES ($1)`;
          try {
            await db.query(sql, [value]);
            await db.query(sql, [value]);
          } catch (error) {
            const { message, detail } = error as { message: string; detail?: string };
            throw new Error(`insert failed: ${message}. ${detail ?? ''}`);
          }
          return { ok: true };
        }
        case 'url':
          throw new Error(`GET https://api.example.com/v1/customers?q=${text}&page=2 failed with 404`);
        case 'jwt':
          throw new Error(`token ${token} rejected for ${text}`);
        case 'bearer':
          throw new Error(`401 from billing (Authorization: Bearer ${token}) for ${text}`);
        default:
          return { ok: true };
      }
    },
  });
  const validate = ledger.tool({
    name: 'open_invoice',
    kind: 'mutation',
    input: z.object({
      invoice: z
        .string()
        .regex(/^inv_\d+$/, { error: (issue) => `expected an invoice id, got "${String(issue.input)}"` }),
    }),
    handler: ({ invoice }) => ({ invoice }),
  });

  const secrets: string[] = [];
  for (const [i, { category, value }] of input.values.entries()) {
    const text = inText(category, value);
    const key = `customer:${value}`;
    const structured = {
      customer: { [category]: value },
      form: [{ name: category, value }],
      comment: `customer said: my ${category.replace(/_/g, ' ')} is ${value}`,
      note: text,
    };
    await settle(update.invoke(structured, { key, tenant: 'acme', toolCallId: text }));
    await settle(update.invoke(structured, { key, tenant: 'acme' }));
    await settle(lookup.invoke({ query: text }, { tenant: `tenant ${text}` }));
    const jwt = jwtFor(value, i);
    const bearer = bearerFor(i);
    secrets.push(jwt, jwt.split('.')[1] ?? jwt, bearer);
    for (const [form, token] of [
      ['cause', ''],
      ['final', ''],
      ['postgres', ''],
      ['url', ''],
      ['jwt', jwt],
      ['bearer', bearer],
    ] as const) {
      await settle(
        charge.invoke(
          { form, text, column: category, [category]: value, token },
          { key: `${form}:${value}`, tenant: 'acme' },
        ),
      );
    }
    await settle(validate.invoke({ invoice: text }, { key: `invoice:${value}`, tenant: 'acme' }));
  }

  // Identifiers: in arguments and results (content capture) and in error messages, where support reads them
  const create = ledger.tool({
    name: 'create_invoice',
    kind: 'mutation',
    handler: (args: unknown) => {
      const { ref, fail } = args as { ref: string; fail: boolean };
      if (fail) throw new Error(`Invoice ${ref} not found`);
      return { id: ref, note: `created ${ref}` };
    },
  });
  for (const [i, { value }] of input.identifiers.entries()) {
    await settle(create.invoke({ ref: value, fail: false }, { key: `id-ok-${i}`, tenant: 'acme' }));
    await settle(create.invoke({ ref: value, fail: true }, { key: `id-fail-${i}`, tenant: 'acme' }));
  }

  const spans = telemetry.finishedSpans();
  const records = telemetry.logRecords();
  const metricData = await telemetry.reader.metrics();
  // Leaks are searched in the personal-data calls only: an identifier's digits can contain a value's digits
  // (1234567890123 holds 123-45-6789) without anything personal being there.
  const piiSpans = spans.filter((s) => s.name !== 'execute_tool create_invoice');
  const piiRecords = records.filter((r) => r.attributes[ATTR.GEN_AI_TOOL_NAME] !== 'create_invoice');
  const texts: Record<Signal, string[]> = {
    spans: piiSpans.flatMap((s) => [s.name, s.status.message ?? '', ...stringsOf(s.attributes)]),
    'span events': piiSpans.flatMap((s) => s.events.flatMap((e) => [e.name, ...stringsOf(e.attributes)])),
    'log bodies': piiRecords.map((r) => (typeof r.body === 'string' ? r.body : JSON.stringify(r.body ?? ''))),
    'log attributes': piiRecords.flatMap((r) => stringsOf(r.attributes)),
    'metric attributes': metricData.flatMap((m) =>
      m.dataPoints.flatMap((p) => stringsOf(p.attributes as Record<string, unknown>)),
    ),
  };

  const checked = [...input.values.map((v) => v.value), ...secrets];
  const signals = {} as Record<Signal, SignalFigures>;
  for (const signal of SIGNALS) {
    const lower = texts[signal].join('\u0000').toLowerCase();
    // Digit-only forms too, so `4111 1111 1111 1111` is caught when written as 4111-1111-…; hex digests are
    // left out of that search, since their digits say nothing.
    const digits = texts[signal]
      .filter((s) => !/^[0-9a-f]+$/i.test(s))
      .map((s) => s.replace(/\D/g, ''))
      .join('\u0000');
    const leaked = checked.filter((value) => {
      const valueDigits = value.replace(/\D/g, '');
      return lower.includes(value.toLowerCase()) || (valueDigits.length >= 9 && digits.includes(valueDigits));
    });
    const where = leaked.map((value) => {
      const valueDigits = value.replace(/\D/g, '');
      const found = texts[signal].find(
        (t) =>
          t.toLowerCase().includes(value.toLowerCase()) ||
          (valueDigits.length >= 9 && !/^[0-9a-f]+$/i.test(t) && t.replace(/\D/g, '').includes(valueDigits)),
      );
      return `${value} in ${JSON.stringify(found?.slice(0, 200))}`;
    });
    signals[signal] = { leaked, where, altered: alteredIn(signal) };
  }

  function alteredIn(signal: Signal): string[] | undefined {
    // Keys are on the span raw or as their HMAC, by the key policy: both forms find the call
    const callOf = new Map<string, { i: number; ok: boolean }>();
    input.identifiers.forEach((_, i) => {
      for (const ok of [true, false]) {
        const key = `id-${ok ? 'ok' : 'fail'}-${i}`;
        callOf.set(key, { i, ok }).set(hashKey(key, SECRET), { i, ok });
      }
    });
    const find = (attributes: Readonly<Record<string, unknown>>) =>
      callOf.get(String(attributes[ATTR.IDEMPOTENCY_KEY] ?? attributes[ATTR.IDEMPOTENCY_KEY_HASH] ?? ''));
    const byKey = new Map<number, { ok?: (typeof spans)[number]; fail?: (typeof spans)[number] }>();
    for (const span of spans) {
      const call = find(span.attributes);
      if (span.name !== 'execute_tool create_invoice' || call === undefined) continue;
      const entry = byKey.get(call.i) ?? {};
      entry[call.ok ? 'ok' : 'fail'] = span;
      byKey.set(call.i, entry);
    }
    const failRecords = new Map<number, (typeof records)[number]>();
    for (const record of records) {
      const call = find(record.attributes);
      if (call !== undefined && !call.ok) failRecords.set(call.i, record);
    }
    const recordFor = (i: number) => failRecords.get(i);
    const json = (value: string) => JSON.stringify(value).slice(1, -1);
    const intact = (i: number, value: string): boolean => {
      const message = `Invoice ${value} not found`;
      const { ok, fail } = byKey.get(i) ?? {};
      switch (signal) {
        case 'spans': {
          if (fail?.status.message !== message) return false;
          if (!input.captureContent) return true;
          const args = String(ok?.attributes[ATTR.GEN_AI_TOOL_CALL_ARGUMENTS] ?? '');
          const result = String(ok?.attributes[ATTR.GEN_AI_TOOL_CALL_RESULT] ?? '');
          return (
            args.includes(`"ref":"${json(value)}"`) && result.includes(`"note":"created ${json(value)}"`)
          );
        }
        case 'span events':
          return fail?.events.some((e) => e.attributes?.['exception.message'] === message) ?? false;
        case 'log bodies':
          return String(recordFor(i)?.body ?? '').endsWith(message);
        case 'log attributes':
          return recordFor(i)?.attributes['exception.message'] === message;
        case 'metric attributes':
          return true;
      }
    };
    if (signal === 'metric attributes') return undefined;
    return input.identifiers.filter(({ value }, i) => !intact(i, value)).map(({ value }) => value);
  }

  await ledger.close({ timeoutSeconds: 1 });
  await telemetry.shutdown();
  await db.close();
  return { calls, checked: checked.length, identifiers: input.identifiers.length, signals };
}
