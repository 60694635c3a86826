import type { Span } from '@opentelemetry/api';
import { LoggerProvider } from '@opentelemetry/sdk-logs';
import {
  MeterProvider,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import type { CallStart, Decision } from '../../../src/contract/observer.js';
import { createOtelObserver } from '../../../src/telemetry/observer.js';
import type { Redactor } from '../../../src/telemetry/options.js';
import { ATTR } from '../../../src/telemetry/vocabulary.js';
import {
  failingSpanExporter,
  resetGlobals,
  TelemetryHarness,
  throwingSpanProcessor,
} from '../../support/telemetry-harness.js';

const START: CallStart = {
  tool: 'refund_payment',
  kind: 'mutation',
  tenant: 'acme',
  key: 'refund:maria.gonzalez@example.com',
  user: undefined,
  toolCallId: 'call_1',
  input: { email: 'maria.gonzalez@example.com' },
};

/** Runs one call through the observer the way the middleware does and returns what the caller would get. */
function runCall(observer = createOtelObserver({}), start: CallStart = START, decision?: Decision) {
  const scope = observer.startCall(start);
  const value = scope.run(() => {
    scope.handlerStarted();
    scope.recordLedgerOperation('claim', 0.001);
    scope.handlerFinished();
    return { refunded: true };
  });
  scope.setParamsHash('ab'.repeat(32));
  scope.end(decision ?? { outcome: 'executed', attempt: 1, executionSeconds: 0.001, result: value });
  return value;
}

afterEach(() => resetGlobals());

describe('telemetry never changes a call', () => {
  it('a redactor that throws drops only the attributes it was scrubbing', () => {
    // Prepare
    const harness = new TelemetryHarness().registerGlobal();
    const throwing: Redactor = {
      redactText: () => {
        throw new Error('redactor bug');
      },
      redactValue: () => {
        throw new Error('redactor bug');
      },
    };
    const observer = createOtelObserver({ redactor: throwing, captureContent: true, keyHashSecret: 's' });

    // Act
    const value = runCall(observer, START, {
      outcome: 'failed',
      error: new Error('Refund failed for maria.gonzalez@example.com'),
    });

    // Assess
    expect(value).toEqual({ refunded: true });
    const [span] = harness.finishedSpans();
    expect(span?.attributes[ATTR.OUTCOME]).toBe('failed');
    expect(span?.attributes[ATTR.TENANT_ID]).toBeUndefined();
    expect(span?.attributes[ATTR.GEN_AI_TOOL_CALL_ARGUMENTS]).toBeUndefined();
    // A key the redactor could not judge is treated as personal: hashed, never raw
    expect(span?.attributes[ATTR.IDEMPOTENCY_KEY]).toBeUndefined();
    expect(span?.attributes[ATTR.IDEMPOTENCY_KEY_HASH]).toMatch(/^[0-9a-f]{64}$/);
    expect(
      JSON.stringify([span?.attributes, span?.events, span?.status, harness.logRecords()[0]?.body]),
    ).not.toContain('maria');
  });

  it('bad attribute values are dropped, the rest is kept', () => {
    const harness = new TelemetryHarness().registerGlobal();
    const bad = {
      ...START,
      tool: 'refund_payment',
      tenant: { not: 'a string' },
      toolCallId: Symbol('x'),
      kind: ['mutation', 1],
    } as unknown as CallStart;

    const value = runCall(createOtelObserver({}), bad, {
      outcome: 'executed',
      attempt: Number.NaN,
      waitedMs: Number.POSITIVE_INFINITY,
      jobId: { id: 1 } as unknown as string,
      executionSeconds: Number.NaN,
    });

    expect(value).toEqual({ refunded: true });
    const [span] = harness.finishedSpans();
    expect(span?.attributes[ATTR.OUTCOME]).toBe('executed');
    expect(span?.attributes[ATTR.GEN_AI_TOOL_NAME]).toBe('refund_payment');
    for (const name of [
      ATTR.TENANT_ID,
      ATTR.GEN_AI_TOOL_CALL_ID,
      ATTR.TOOL_KIND,
      ATTR.ATTEMPT,
      ATTR.WAITED_MS,
      ATTR.JOB_ID,
    ]) {
      expect(span?.attributes[name]).toBeUndefined();
    }
  });

  it('exporters and processors that fail or throw leave the result unchanged', async () => {
    // Prepare: every signal's pipeline is broken in a different way
    const throwingMetricExporter: PushMetricExporter = {
      export: () => {
        throw new Error('metric exporter bug');
      },
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [
        new BatchSpanProcessor(failingSpanExporter(), { scheduledDelayMillis: 1 }),
        throwingSpanProcessor(),
      ],
    });
    const meterProvider = new MeterProvider({
      readers: [
        new PeriodicExportingMetricReader({ exporter: throwingMetricExporter, exportIntervalMillis: 100 }),
      ],
    });
    const loggerProvider = new LoggerProvider({
      processors: [
        {
          onEmit: () => {
            throw new Error('log processor bug');
          },
          forceFlush: async () => {},
          shutdown: async () => {},
        },
      ],
    });
    const observer = createOtelObserver({
      tracerProvider,
      meterProvider,
      loggerProvider,
      captureContent: true,
    });

    // Act
    const results = Array.from({ length: 5 }, () => runCall(observer));
    await tracerProvider.forceFlush();
    await meterProvider.forceFlush().catch(() => {});

    // Assess
    expect(results).toEqual(Array.from({ length: 5 }, () => ({ refunded: true })));
    await Promise.allSettled([
      tracerProvider.shutdown(),
      meterProvider.shutdown(),
      loggerProvider.shutdown(),
    ]);
  });

  it('a span whose methods throw cannot fail the call, and run() still runs the function once', () => {
    const brokenSpan = new Proxy({} as Span, {
      get: (_target, property) => {
        if (property === 'isRecording') return () => true;
        if (property === 'spanContext')
          return () => ({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 });
        return () => {
          throw new Error('span bug');
        };
      },
    });
    const tracerProvider = {
      getTracer: () => ({ startSpan: () => brokenSpan, startActiveSpan: () => undefined }),
    };
    const observer = createOtelObserver({ tracerProvider: tracerProvider as never });
    let runs = 0;
    const scope = observer.startCall(START);
    expect(scope.run(() => ++runs)).toBe(1);
    expect(() => scope.end({ outcome: 'executed' })).not.toThrow();
    expect(runs).toBe(1);
  });

  it('run() passes the function error through unchanged', async () => {
    const scope = createOtelObserver({}).startCall(START);
    const error = new Error('handler failed');
    expect(() =>
      scope.run(() => {
        throw error;
      }),
    ).toThrow(error);
    await expect(scope.run(async () => Promise.reject(error))).rejects.toBe(error);
    scope.end({ outcome: 'failed', error });
  });
});
