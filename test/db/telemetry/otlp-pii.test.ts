import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, metrics, trace } from '@opentelemetry/api';
import { logs } from '@opentelemetry/api-logs';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolFailure } from '../../../src/index.js';
import { hashKey } from '../../../src/telemetry/key-hash.js';
import { ATTR, METRIC } from '../../../src/telemetry/vocabulary.js';
import { pgliteBackend } from '../../support/db.js';
import {
  contextsOf,
  EMPTY_CORPUS,
  labelOf,
  type PiiCorpus,
  corpus as repoCorpus,
  SHARED_CORPUS_SUITE,
  sharedCorpus,
} from '../../support/pii-corpus.js';
import { resetGlobals } from '../../support/telemetry-harness.js';

const SECRET = 'acceptance-secret';

interface Received {
  readonly path: string;
  readonly contentType: string;
  readonly body: Buffer;
}

/** A minimal OTLP/HTTP receiver: stores every request body and answers 200. */
async function startReceiver(): Promise<{ server: Server; url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        contentType: String(req.headers['content-type']),
        body: Buffer.concat(chunks),
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** Every string in a decoded OTLP JSON payload (attribute values, bodies, names, event messages). */
function strings(node: unknown, out: string[] = []): string[] {
  if (typeof node === 'string') out.push(node);
  else if (Array.isArray(node)) for (const item of node) strings(item, out);
  else if (node && typeof node === 'object') for (const value of Object.values(node)) strings(value, out);
  return out;
}

function attributeKeys(node: unknown, out: Set<string> = new Set()): Set<string> {
  if (Array.isArray(node)) for (const item of node) attributeKeys(item, out);
  else if (node && typeof node === 'object') {
    const record = node as Record<string, unknown>;
    if (typeof record.key === 'string' && 'value' in record) out.add(record.key);
    for (const value of Object.values(record)) attributeKeys(value, out);
  }
  return out;
}

const digitsOf = (text: string) => text.replace(/\D/g, '');

const HEX_DIGIT = /[0-9a-f]/i;

/**
 * Where `text` holds `value`, with 20 characters either side, or undefined. A value of digits only counts where it is
 * not inside a longer run of hex digits: OTLP/JSON writes nanosecond timestamps as 19-digit strings and ids as hex,
 * and a 5-digit postcode of the corpus turns up inside one of them now and then (`75008` inside a trace id, seen once
 * in twelve runs; `10115` failed a CI run the same way), which is no leak.
 */
function foundIn(text: string, value: string): string | undefined {
  const digitsOnly = /^\d+$/.test(value);
  for (let at = text.indexOf(value); at !== -1; at = text.indexOf(value, at + 1)) {
    const inLongerRun =
      digitsOnly && (HEX_DIGIT.test(text[at - 1] ?? '') || HEX_DIGIT.test(text[at + value.length] ?? ''));
    if (!inLongerRun) return text.slice(Math.max(0, at - 20), at + value.length + 20);
  }
  return undefined;
}

/**
 * Every value goes through the redactor in test/unit/telemetry/redact.test.ts; over OTLP, each category's values
 * take turns so the suite stays short: the first of each category and every tenth after that. Labelled-only
 * categories (passwords, hex API keys, bare ZIPs, passports: recognisable only by a label or a field name) are
 * checked with every value, since their detection depends on how the label reaches the scrubber.
 */
function sample(corpus: PiiCorpus): PiiCorpus['values'] {
  const seen = new Map<string, number>();
  return corpus.values.filter(({ category }, index) => {
    if (labelOf(category) !== undefined) return true;
    const n = seen.get(category) ?? 0;
    seen.set(category, n + 1);
    return n < 1 || index % 10 === 0;
  });
}

function leakSuite(corpus: PiiCorpus): void {
  const backend = pgliteBackend();
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let flush: () => Promise<void>;
  let payloads: {
    path: string;
    /** The body as the collector receives it, as text (UTF-8, as the values are searched for). */
    rawText: string;
    decoded: unknown;
    /** Precomputed once: the raw text lower-cased, and every decoded string lower-cased and as digits. */
    lowerRaw: string;
    texts: { lower: string; digits: string; hex: boolean }[];
  }[] = [];

  beforeAll(async () => {
    // Prepare: a real SDK with batch processors and OTLP/HTTP exporters, registered globally
    receiver = await startReceiver();
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${receiver.url}/v1/traces` }))],
    });
    const reader = new PeriodicExportingMetricReader({
      exporter: new OTLPMetricExporter({ url: `${receiver.url}/v1/metrics` }),
      exportIntervalMillis: 60_000,
    });
    const meterProvider = new MeterProvider({ readers: [reader] });
    const loggerProvider = new LoggerProvider({
      processors: [
        new BatchLogRecordProcessor({ exporter: new OTLPLogExporter({ url: `${receiver.url}/v1/logs` }) }),
      ],
    });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(tracerProvider);
    metrics.setGlobalMeterProvider(meterProvider);
    logs.setGlobalLoggerProvider(loggerProvider);
    flush = async () => {
      await tracerProvider.forceFlush();
      await meterProvider.forceFlush();
      await loggerProvider.forceFlush();
    };

    const ledger = await backend.open({
      telemetry: { captureContent: true, keyHashSecret: SECRET, metricTenants: ['acme'] },
    });
    const echo = ledger.tool({
      name: 'update_customer',
      kind: 'mutation',
      handler: (input: unknown) => ({
        saved: input,
        note: `Saved ${JSON.stringify(input)}`,
        // JSON inside a JSON string: the field names arrive with escaped quotes
        envelope: JSON.stringify({ body: JSON.stringify(input) }),
        id: 'inv_2024_0042',
      }),
    });
    const fail = ledger.tool({
      name: 'refund_payment',
      kind: 'mutation',
      handler: (input: unknown) => {
        const { text, final } = input as { text: string; final: boolean };
        if (final) throw new ToolFailure(text, { details: { text } });
        throw new Error(text);
      },
    });
    const lookup = ledger.tool({
      name: 'find_customer',
      kind: 'read',
      handler: (input: unknown) => ({ found: input }),
    });

    // Act: every corpus value as a structured field, in free text (arguments, results, errors) and in keys
    const outcomes: string[] = [];
    const settle = (p: Promise<{ outcome: string }>) =>
      p.then(
        (r) => outcomes.push(r.outcome),
        () => outcomes.push('error'),
      );
    for (const [i, { category, value }] of sample(corpus).entries()) {
      // A labelled-only value travels with its label or under a field name; bare, it is any opaque id
      const label = labelOf(category);
      const query = label === undefined ? value : `${label} ${value}`;
      const structured = corpus.structured_examples[i % corpus.structured_examples.length]!;
      const input = {
        ...structured,
        [category]: value,
        comment: `customer said: my ${category.replace(/_/g, ' ')} is ${value}`,
      };
      const key = `customer:${value}`;
      await settle(echo.invoke(input, { key, tenant: 'acme', toolCallId: `call_${i}` }));
      await settle(echo.invoke(input, { key, tenant: 'acme' }));
      await settle(echo.invoke({ other: true }, { key, tenant: 'acme' }));
      await settle(
        fail.invoke(
          { text: `${contextsOf(category, value).at(-1)}`, final: i % 2 === 0 },
          { key: `refund:${value}` },
        ),
      );
      await settle(
        lookup.invoke(
          { query, form: [{ name: category, value }], settings: [{ key: category, value }] },
          { tenant: 'globex' },
        ),
      );
    }
    for (const [i, text] of corpus.free_text_examples.entries()) {
      await settle(fail.invoke({ text, final: true }, { key: `free-${i}`, tenant: 'acme' }));
    }
    expect(outcomes).toContain('executed');
    expect(outcomes).toContain('replayed');
    expect(outcomes).toContain('error');

    await flush();
    payloads = receiver.received.map((r) => {
      const decoded = JSON.parse(r.body.toString('utf8')) as unknown;
      return {
        path: r.path,
        rawText: r.body.toString('utf8'),
        decoded,
        lowerRaw: r.body.toString('utf8').toLowerCase(),
        texts: strings(decoded).map((s) => ({
          lower: s.toLowerCase(),
          digits: digitsOf(s),
          hex: /^[0-9a-f]+$/i.test(s),
        })),
      };
    });
  });

  afterAll(async () => {
    resetGlobals();
    await new Promise((resolve) => receiver.server.close(resolve));
  });

  it('exported every signal over OTLP/HTTP with the scrubbed content present', () => {
    const paths = new Set(payloads.map((p) => p.path));
    expect(paths).toEqual(new Set(['/v1/traces', '/v1/metrics', '/v1/logs']));
    const keys = attributeKeys(payloads.map((p) => p.decoded));
    for (const name of [
      ATTR.GEN_AI_TOOL_CALL_ARGUMENTS,
      ATTR.GEN_AI_TOOL_CALL_RESULT,
      ATTR.IDEMPOTENCY_KEY_HASH,
    ]) {
      expect(keys).toContain(name);
    }
    const text = strings(payloads.map((p) => p.decoded));
    expect(text).toContain('execute_tool update_customer');
    expect(text.some((s) => s.includes('[REDACTED]'))).toBe(true);
    expect(text.some((s) => s.includes('[EMAIL]'))).toBe(true);
    // Identifiers support needs survive scrubbing
    expect(text.some((s) => s.includes('inv_2024_0042'))).toBe(true);
    // A support engineer holding a raw key finds its span by the public hash function
    expect(text).toContain(hashKey(`customer:${corpus.values[0]!.value}`, SECRET));
  });

  it.each(corpus.values)('no trace of the $category value in any payload', ({ value }) => {
    for (const payload of payloads) {
      // Raw bytes, as the collector receives them
      expect(foundIn(payload.rawText, value), `${value} in raw ${payload.path}`).toBeUndefined();
      const lower = value.toLowerCase();
      expect(foundIn(payload.lowerRaw, lower), `${value} in ${payload.path}`).toBeUndefined();
      // Decoded content, including forms a reader could normalise back (case, separators in numbers)
      const digits = digitsOf(value);
      for (const s of payload.texts) {
        expect(foundIn(s.lower, lower), payload.path).toBeUndefined();
        if (digits.length >= 9 && !s.hex && s.digits.includes(digits))
          expect(s.digits, payload.path).not.toContain(digits);
      }
    }
  });

  it('puts no key, call id, params hash or trace id on metrics, and tenants only when allow-listed', () => {
    const metricPayloads = payloads.filter((p) => p.path === '/v1/metrics').map((p) => p.decoded);
    const keys = attributeKeys(metricPayloads);
    for (const forbidden of [
      ATTR.IDEMPOTENCY_KEY,
      ATTR.IDEMPOTENCY_KEY_HASH,
      ATTR.GEN_AI_TOOL_CALL_ID,
      ATTR.PARAMS_HASH,
    ]) {
      expect(keys).not.toContain(forbidden);
    }
    const text = strings(metricPayloads);
    expect(text).toContain(METRIC.TOOL_CALLS);
    expect(text).toContain('acme');
    expect(text).not.toContain('globex');
  });
}

describe('personal data never leaves the process (OTLP/HTTP, content capture on, in-repo corpus)', () =>
  leakSuite(repoCorpus));

describe.skipIf(sharedCorpus === undefined)(`${SHARED_CORPUS_SUITE}: OTLP/HTTP payloads`, () =>
  leakSuite(sharedCorpus ?? EMPTY_CORPUS),
);
