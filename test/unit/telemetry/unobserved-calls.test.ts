import { createRequire } from 'node:module';
import { join } from 'node:path';
import { metrics, ProxyTracerProvider, trace } from '@opentelemetry/api';
import { logs } from '@opentelemetry/api-logs';
import { describe, expect, it } from 'vitest';
import type { CallObserver } from '../../../src/contract/observer.js';
import { createOtelObserver } from '../../../src/telemetry/observer.js';
import type { Redactor } from '../../../src/telemetry/options.js';
import { ATTR, METRIC } from '../../../src/telemetry/vocabulary.js';
import { resetGlobals, useHarnesses } from '../../support/telemetry-harness.js';

// With no SDK registered, a call is not observed at all. With no tracer or logger (metrics only), its span and log
// record go nowhere, so the attributes only they carry (the key, checked and perhaps hashed; the tool call id,
// scrubbed; the parameter hash's HMAC) are not worked out. Whatever can keep a span or a record (a tracer or a
// logger, registered or configured, even a logger that arrives during an observed call) gets them all, as before.

const KEY = 'refund-order-4711';
const CALL_ID = 'call_9f2';
const PARAMS_HASH = 'ab'.repeat(32);
const SECRET = 'unobserved-calls-test-secret-0123456789';

/** A redactor that scrubs nothing and remembers what it was given. */
function recordingRedactor(): Redactor & { readonly texts: string[] } {
  const texts: string[] = [];
  return {
    texts,
    redactText: (text) => {
      texts.push(text);
      return text;
    },
    redactValue: (value) => value,
  };
}

function startCall(observer: CallObserver) {
  const scope = observer.startCall({
    tool: 'refund_order',
    kind: 'mutation',
    tenant: 'acme',
    key: KEY,
    user: undefined,
    toolCallId: CALL_ID,
    input: {},
  });
  scope.setParamsHash(PARAMS_HASH);
  return scope;
}

const callerAttributes = [ATTR.IDEMPOTENCY_KEY, ATTR.GEN_AI_TOOL_CALL_ID, ATTR.PARAMS_HASH] as const;

const harness = useHarnesses();

describe('a call nothing observes', () => {
  it('is not reported, even to an SDK registered before it ends', async () => {
    // Prepare: nothing registered when the call starts
    const observer = createOtelObserver({ keyHashSecret: SECRET });
    const scope = startCall(observer);

    // Act
    const h = harness().registerGlobal();
    scope.end({ outcome: 'executed', executionSeconds: 0.01 });
    startCall(observer).end({ outcome: 'executed', executionSeconds: 0.01 });

    // Assess: only the call that started after the registration
    expect(h.finishedSpans()).toHaveLength(1);
    expect(h.logRecords()).toHaveLength(1);
    expect((await h.points(METRIC.TOOL_CALLS))[0]?.value).toBe(1);
  });

  it('does not check its key or scrub its call id, with or without a meter', async () => {
    // Prepare: no tracer or logger registered; the second call has a meter provider, so it is observed
    const redactor = recordingRedactor();
    const observer = createOtelObserver({ redactor, keyHashSecret: SECRET });
    startCall(observer).end({ outcome: 'executed', executionSeconds: 0.01 });
    const h = harness();
    metrics.setGlobalMeterProvider(h.meterProvider);

    // Act
    startCall(observer).end({ outcome: 'executed', executionSeconds: 0.01 });

    // Assess: the metrics-only call is counted, and neither call checked the key or scrubbed the call id
    expect((await h.points(METRIC.TOOL_CALLS))[0]?.value).toBe(1);
    expect(redactor.texts).not.toContain(KEY);
    expect(redactor.texts).not.toContain(CALL_ID);
  });
});

describe('a call something observes', () => {
  it('gives a logger alone the key, the call id and the parameter hash', () => {
    // Prepare: only a logger provider registered
    const h = harness();
    logs.setGlobalLoggerProvider(h.loggerProvider);
    const redactor = recordingRedactor();
    const observer = createOtelObserver({ redactor, keyHashSecret: SECRET });

    // Act
    startCall(observer).end({ outcome: 'executed', executionSeconds: 0.01 });

    // Assess
    const [record] = h.logRecords();
    for (const name of callerAttributes) expect(record?.attributes[name]).toBeDefined();
    expect(record?.attributes[ATTR.IDEMPOTENCY_KEY]).toBe(KEY);
    expect(redactor.texts).toContain(KEY);
  });

  it('gives a logger registered during the call the same attributes as one registered before it', () => {
    // Prepare: one call observed from its start
    const before = harness().registerGlobal();
    const observer = createOtelObserver({ keyHashSecret: SECRET });
    startCall(observer).end({ outcome: 'executed', executionSeconds: 0.01 });
    const observedFromStart = before.logRecords()[0]?.attributes;
    resetGlobals();

    // Act: a metrics-only setup (a meter provider, so the call is observed) whose logger arrives during the call
    const during = harness();
    metrics.setGlobalMeterProvider(during.meterProvider);
    const scope = startCall(observer);
    logs.setGlobalLoggerProvider(during.loggerProvider);
    scope.end({ outcome: 'executed', executionSeconds: 0.01 });

    // Assess
    const lateRecord = during.logRecords()[0]?.attributes;
    expect(observedFromStart).toBeDefined();
    for (const name of callerAttributes) {
      expect(lateRecord?.[name]).toBeDefined();
      expect(lateRecord?.[name]).toEqual(observedFromStart?.[name]);
    }
  });

  it('counts configured providers even though nothing is registered globally', () => {
    // Prepare
    const h = harness();
    const observer = createOtelObserver({ keyHashSecret: SECRET, ...h.providers() });

    // Act
    startCall(observer).end({ outcome: 'executed', executionSeconds: 0.01 });

    // Assess: the span and the record both carry the caller's attributes
    const [span] = h.finishedSpans();
    const [record] = h.logRecords();
    for (const name of callerAttributes) {
      expect(span?.attributes[name]).toBeDefined();
      expect(record?.attributes[name]).toBeDefined();
    }
  });

  it('gives a tracer alone the caller attributes at the span start, for samplers', () => {
    // Prepare: only a tracer provider registered
    const h = harness();
    trace.setGlobalTracerProvider(h.tracerProvider);
    const observer = createOtelObserver({ keyHashSecret: SECRET });

    // Act
    startCall(observer).end({ outcome: 'executed', executionSeconds: 0.01 });

    // Assess
    const [span] = h.finishedSpans();
    expect(span?.attributes[ATTR.IDEMPOTENCY_KEY]).toBe(KEY);
    expect(span?.attributes[ATTR.GEN_AI_TOOL_CALL_ID]).toBe(CALL_ID);
    expect(span?.attributes[ATTR.PARAMS_HASH]).toBeDefined();
  });
});

const PACKAGE = join('@opentelemetry', 'api');

/** Loads @opentelemetry/api once more as a module instance of its own, leaving the first in the module cache. */
function secondApiCopy(): typeof import('@opentelemetry/api') {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@opentelemetry/api');
  const packageRoot = entry.slice(0, entry.lastIndexOf(PACKAGE) + PACKAGE.length + 1);
  const cached = Object.entries(require.cache).filter(([path]) => path.startsWith(packageRoot));
  for (const [path] of cached) delete require.cache[path];
  try {
    return require('@opentelemetry/api');
  } finally {
    for (const [path, module] of cached) require.cache[path] = module;
  }
}

describe('an SDK registered through another copy of the API', () => {
  it('counts as registered: its spans get the caller attributes', () => {
    // Prepare: a second instance of @opentelemetry/api (its own classes, the same global registry), as when an
    // application and tool-ledger resolve different copies
    const otherCopy = secondApiCopy();
    expect(otherCopy.ProxyTracerProvider).not.toBe(ProxyTracerProvider);
    const h = harness();
    otherCopy.trace.setGlobalTracerProvider(h.tracerProvider);
    const observer = createOtelObserver({ keyHashSecret: SECRET });

    // Act
    startCall(observer).end({ outcome: 'executed', executionSeconds: 0.01 });

    // Assess
    const [span] = h.finishedSpans();
    expect(span?.attributes[ATTR.IDEMPOTENCY_KEY]).toBe(KEY);
    otherCopy.trace.disable();
  });
});
