import { createHmac } from 'node:crypto';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Histogram } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { ToolFailure, ToolLedgerError } from '../../../src/contract/errors.js';
import type { CallStart, Decision } from '../../../src/contract/observer.js';
import { hashKey } from '../../../src/telemetry/key-hash.js';
import { createOtelObserver } from '../../../src/telemetry/observer.js';
import type { TelemetryOptions } from '../../../src/telemetry/options.js';
import { ATTR, DURATION_BUCKETS_SECONDS, LOG_EVENT_NAME, METRIC } from '../../../src/telemetry/vocabulary.js';
import { resetGlobals, useGlobalHarness } from '../../support/telemetry-harness.js';

const SECRET = 'test-secret';

function start(overrides: Partial<CallStart> = {}): CallStart {
  return {
    tool: 'refund_payment',
    kind: 'mutation',
    tenant: 'acme',
    key: 'inv_2024_0042',
    user: 'u_1',
    toolCallId: 'call_1',
    input: { invoice: 'inv_2024_0042', amount_cents: 4500 },
    ...overrides,
  };
}

const harness = useGlobalHarness();

function observer(options: TelemetryOptions = {}) {
  return createOtelObserver({ keyHashSecret: SECRET, ...options });
}

function onlySpan(): ReadableSpan {
  const spans = harness().finishedSpans();
  expect(spans).toHaveLength(1);
  return spans[0]!;
}

describe('span', () => {
  it('is an INTERNAL execute_tool span with the call attributes set at start', async () => {
    // Prepare: a processor that sees the span as samplers do, at start
    const atStart: Record<string, unknown>[] = [];
    const probe: SpanProcessor = {
      onStart: (span) => atStart.push({ ...(span as unknown as ReadableSpan).attributes }),
      onEnd: () => {},
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    const provider = new BasicTracerProvider({ spanProcessors: [probe] });

    // Act
    observer({ tracerProvider: provider }).startCall(start()).end({ outcome: 'executed' });

    // Assess
    expect(atStart[0]).toEqual({
      [ATTR.GEN_AI_OPERATION_NAME]: 'execute_tool',
      [ATTR.GEN_AI_TOOL_NAME]: 'refund_payment',
      [ATTR.GEN_AI_TOOL_TYPE]: 'function',
      [ATTR.GEN_AI_TOOL_CALL_ID]: 'call_1',
      [ATTR.TENANT_ID]: 'acme',
      [ATTR.TOOL_KIND]: 'mutation',
      [ATTR.IDEMPOTENCY_KEY]: 'inv_2024_0042',
    });
  });

  it('records the decision and ends with status unset for an execution', () => {
    const scope = observer().startCall(start());
    scope.setParamsHash('ab'.repeat(32));
    scope.end({ outcome: 'executed', attempt: 1, executionSeconds: 0.01 });

    const span = onlySpan();
    expect(span.name).toBe('execute_tool refund_payment');
    expect(span.kind).toBe(SpanKind.INTERNAL);
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    expect(span.attributes).toMatchObject({
      [ATTR.OUTCOME]: 'executed',
      [ATTR.ATTEMPT]: 1,
      // Keyed under the secret, never the bare hash of the input.
      [ATTR.PARAMS_HASH]: hashKey('ab'.repeat(32), SECRET),
    });
    expect(span.attributes[ATTR.GEN_AI_TOOL_CALL_ARGUMENTS]).toBeUndefined();
    expect(scope.spanRef).toEqual({ traceId: span.spanContext().traceId, spanId: span.spanContext().spanId });
  });

  it.each<[Decision, SpanStatusCode, Record<string, unknown>]>([
    [{ outcome: 'replayed', attempt: 1 }, SpanStatusCode.UNSET, {}],
    [
      { outcome: 'failed', attempt: 2, error: new ToolFailure('card declined') },
      SpanStatusCode.ERROR,
      { [ATTR.ERROR_TYPE]: 'TOOL_FAILED' },
    ],
    [
      {
        outcome: 'conflict',
        conflictReason: 'params_mismatch',
        error: new ToolLedgerError('KEY_REUSED', 'Key reused with other parameters'),
      },
      SpanStatusCode.ERROR,
      { [ATTR.CONFLICT_REASON]: 'params_mismatch', [ATTR.ERROR_TYPE]: 'KEY_REUSED' },
    ],
    [
      { outcome: 'in_progress', waitedMs: 1500, error: new ToolLedgerError('IN_PROGRESS', 'still running') },
      SpanStatusCode.ERROR,
      { [ATTR.WAITED_MS]: 1500, [ATTR.ERROR_TYPE]: 'IN_PROGRESS' },
    ],
    [
      {
        outcome: 'rejected',
        rejectedReason: 'key_required',
        error: new ToolLedgerError('KEY_REQUIRED', 'no key'),
      },
      SpanStatusCode.ERROR,
      { [ATTR.REJECTED_REASON]: 'key_required', [ATTR.ERROR_TYPE]: 'KEY_REQUIRED' },
    ],
    [
      { outcome: 'failed', error: new TypeError('boom') },
      SpanStatusCode.ERROR,
      { [ATTR.ERROR_TYPE]: 'TypeError' },
    ],
    [{ outcome: 'failed', error: 'a string' }, SpanStatusCode.ERROR, { [ATTR.ERROR_TYPE]: '_OTHER' }],
  ])('outcome %# (%o) sets status and reason attributes', (decision, status, attributes) => {
    observer().startCall(start()).end(decision);

    const span = onlySpan();
    expect(span.status.code).toBe(status);
    expect(span.attributes[ATTR.OUTCOME]).toBe(decision.outcome);
    expect(span.attributes).toMatchObject(attributes);
  });

  it.each(['replayed', 'in_progress', 'conflict'] as const)(
    'a %s span links to the original execution',
    (outcome) => {
      const original = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };
      observer().startCall(start()).end({ outcome, original });

      const [link] = onlySpan().links;
      expect(link?.context.traceId).toBe(original.traceId);
      expect(link?.context.spanId).toBe(original.spanId);
      expect(link?.attributes).toEqual({ [ATTR.LINK_TYPE]: 'original_execution' });
    },
  );

  it('drops a link to malformed ids', () => {
    observer()
      .startCall(start())
      .end({ outcome: 'replayed', original: { traceId: 'nope', spanId: '0000000000000000' } });
    expect(onlySpan().links).toEqual([]);
  });

  it('parents under the active span and makes the call span active inside run()', () => {
    const tracer = trace.getTracer('test');
    const parent = tracer.startSpan('agent turn');
    const scope = context.with(trace.setSpan(context.active(), parent), () => observer().startCall(start()));
    const inner = scope.run(() => trace.getActiveSpan()?.spanContext().spanId);
    scope.end({ outcome: 'executed' });
    parent.end();

    const call = harness()
      .finishedSpans()
      .find((s) => s.name.startsWith('execute_tool'))!;
    expect(call.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    expect(inner).toBe(call.spanContext().spanId);
  });

  it('records a failure as a scrubbed exception event', () => {
    const error = new ToolFailure(
      'Refund failed for maria.gonzalez@example.com: card 5555-5555-5555-4444 declined',
    );
    observer().startCall(start()).end({ outcome: 'failed', error });

    const span = onlySpan();
    const event = span.events.find((e) => e.name === 'exception');
    expect(event?.attributes?.['exception.message']).toBe('Refund failed for [EMAIL]: card [CARD] declined');
    expect(span.status.message).toBe('Refund failed for [EMAIL]: card [CARD] declined');
    expect(JSON.stringify(event)).not.toContain('maria.gonzalez');
  });

  it('emits nothing and returns no spanRef once a span is not recording', () => {
    resetGlobals();
    const scope = createOtelObserver({}).startCall(start());
    expect(scope.spanRef).toBeUndefined();
    expect(scope.run(() => 42)).toBe(42);
    scope.end({ outcome: 'executed' });
    expect(harness().finishedSpans()).toEqual([]);
  });
});

describe('keys', () => {
  const hmac = (key: string) => createHmac('sha256', SECRET).update(key).digest('hex');

  it.each<[TelemetryOptions['keyMode'], string, Record<string, unknown>]>([
    ['auto', 'inv_2024_0042', { [ATTR.IDEMPOTENCY_KEY]: 'inv_2024_0042' }],
    [
      'auto',
      'refund:maria.gonzalez@example.com',
      { [ATTR.IDEMPOTENCY_KEY_HASH]: hmac('refund:maria.gonzalez@example.com') },
    ],
    ['hash', 'inv_2024_0042', { [ATTR.IDEMPOTENCY_KEY_HASH]: hmac('inv_2024_0042') }],
    [
      'raw',
      'refund:maria.gonzalez@example.com',
      { [ATTR.IDEMPOTENCY_KEY]: 'refund:maria.gonzalez@example.com' },
    ],
  ])('keyMode %s emits %s as %o', (keyMode, key, expected) => {
    observer({ keyMode }).startCall(start({ key })).end({ outcome: 'executed' });

    const attributes = onlySpan().attributes;
    const keyAttributes = Object.fromEntries(
      Object.entries(attributes).filter(([name]) => name.startsWith('tool_ledger.idempotency.key')),
    );
    expect(keyAttributes).toEqual(expected);
    expect(harness().logRecords()[0]?.attributes).toMatchObject(expected);
  });

  it('hashes a personal key under a process secret when none is configured', () => {
    createOtelObserver({ keyHashSecret: '' })
      .startCall(start({ key: 'refund:maria.gonzalez@example.com' }))
      .end({ outcome: 'executed' });
    const attributes = onlySpan().attributes;
    expect(JSON.stringify(attributes)).not.toContain('maria');
    expect(attributes[ATTR.IDEMPOTENCY_KEY]).toBeUndefined();
    expect(attributes[ATTR.IDEMPOTENCY_KEY_HASH]).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('content capture', () => {
  const input = {
    customer: { email: 'maria.gonzalez@example.com', name: 'Maria Gonzalez' },
    amount_cents: 4500,
  };

  it('is off by default', () => {
    observer()
      .startCall(start({ input }))
      .end({ outcome: 'executed', result: { ok: true } });
    const attributes = onlySpan().attributes;
    expect(attributes[ATTR.GEN_AI_TOOL_CALL_ARGUMENTS]).toBeUndefined();
    expect(attributes[ATTR.GEN_AI_TOOL_CALL_RESULT]).toBeUndefined();
  });

  it('records scrubbed arguments and results when on, never on logs', () => {
    observer({ captureContent: true })
      .startCall(start({ input }))
      .end({
        outcome: 'executed',
        result: { receipt: 'sent to j.doe+billing@example.org', id: 'inv_2024_0042' },
      });

    const attributes = onlySpan().attributes;
    expect(JSON.parse(String(attributes[ATTR.GEN_AI_TOOL_CALL_ARGUMENTS]))).toEqual({
      customer: { email: '[REDACTED]', name: '[REDACTED]' },
      amount_cents: 4500,
    });
    expect(JSON.parse(String(attributes[ATTR.GEN_AI_TOOL_CALL_RESULT]))).toEqual({
      receipt: 'sent to [EMAIL]',
      id: 'inv_2024_0042',
    });
    expect(harness().logRecords()[0]?.attributes[ATTR.GEN_AI_TOOL_CALL_ARGUMENTS]).toBeUndefined();
  });

  it('truncates long content', () => {
    observer({ captureContent: true, maxContentLength: 20 })
      .startCall(start({ input: { text: 'x'.repeat(100) } }))
      .end({ outcome: 'executed' });
    expect(String(onlySpan().attributes[ATTR.GEN_AI_TOOL_CALL_ARGUMENTS])).toMatch(/^.{20}…\[truncated]$/);
  });
});

describe('decision log', () => {
  it.each([
    ['executed', 'INFO', 9],
    ['replayed', 'INFO', 9],
    ['conflict', 'WARN', 13],
    ['in_progress', 'WARN', 13],
    ['rejected', 'WARN', 13],
    ['failed', 'ERROR', 17],
  ] as const)('a %s decision is logged at %s, correlated with the span', (outcome, text, number) => {
    observer()
      .startCall(start())
      .end({ outcome, error: outcome === 'failed' ? new ToolFailure('declined') : undefined });

    const span = onlySpan();
    const [record] = harness().logRecords();
    expect(record?.eventName).toBe(LOG_EVENT_NAME);
    expect(record?.severityText).toBe(text);
    expect(record?.severityNumber).toBe(number);
    expect(record?.spanContext?.traceId).toBe(span.spanContext().traceId);
    expect(record?.spanContext?.spanId).toBe(span.spanContext().spanId);
    expect(record?.attributes).toMatchObject({
      [ATTR.GEN_AI_TOOL_NAME]: 'refund_payment',
      [ATTR.OUTCOME]: outcome,
      [ATTR.TENANT_ID]: 'acme',
    });
    expect(record?.body).toBe(
      `execute_tool refund_payment ${outcome}${outcome === 'failed' ? ': declined' : ''}`,
    );
  });

  it('carries the scrubbed exception of a failure', () => {
    observer()
      .startCall(start())
      .end({
        outcome: 'failed',
        error: new Error('Could not reach 192.0.2.146 while emailing j.doe+billing@example.org'),
      });
    const [record] = harness().logRecords();
    expect(record?.attributes['exception.type']).toBe('Error');
    expect(record?.attributes['exception.message']).toBe('Could not reach [IP] while emailing [EMAIL]');
    expect(JSON.stringify(record?.attributes)).not.toMatch(/192\.0\.2\.146|j\.doe/);
    expect(String(record?.body)).not.toContain('j.doe');
  });
});

describe('metrics', () => {
  it('counts calls by tool, outcome and kind, never keys, ids or hashes', async () => {
    const o = observer();
    o.startCall(start()).end({ outcome: 'executed', executionSeconds: 0.02 });
    o.startCall(start({ key: 'k2' })).end({ outcome: 'replayed', original: undefined });
    o.startCall(start({ key: 'k3' })).end({ outcome: 'replayed' });

    const points = await harness().points(METRIC.TOOL_CALLS);
    const byOutcome = Object.fromEntries(points.map((p) => [p.attributes[ATTR.OUTCOME], p.value]));
    expect(byOutcome).toEqual({ executed: 1, replayed: 2 });
    for (const p of points) {
      expect(Object.keys(p.attributes).sort()).toEqual(
        [ATTR.GEN_AI_TOOL_NAME, ATTR.OUTCOME, ATTR.TOOL_KIND].sort(),
      );
    }
    expect((await harness().metric(METRIC.TOOL_CALLS))?.descriptor.unit).toBe('{call}');
  });

  it('puts a tenant on metrics only when it is allow-listed', async () => {
    const o = observer({ metricTenants: ['acme'] });
    o.startCall(start({ tenant: 'acme' })).end({ outcome: 'executed' });
    o.startCall(start({ tenant: 'globex' })).end({ outcome: 'executed' });

    const tenants = (await harness().points(METRIC.TOOL_CALLS)).map((p) => p.attributes[ATTR.TENANT_ID]);
    expect(tenants.sort()).toEqual(['acme', undefined]);
  });

  it('records durations in seconds with the advised buckets', async () => {
    const o = observer();
    const scope = o.startCall(start());
    scope.recordLedgerOperation('claim', 0.003);
    scope.recordLedgerOperation('complete', 0.004);
    scope.end({ outcome: 'executed', executionSeconds: 0.25 });
    o.startCall(start({ key: 'dup' })).end({ outcome: 'replayed', waitedMs: 1200 });
    o.startCall(start({ key: 'r' })).end({ outcome: 'replayed', executionSeconds: 5 });

    const execution = await harness().metric(METRIC.EXECUTE_TOOL_DURATION);
    expect(execution?.descriptor.unit).toBe('s');
    expect(execution?.dataPoints).toHaveLength(1);
    const histogram = execution?.dataPoints[0]?.value as Histogram;
    expect(histogram.sum).toBeCloseTo(0.25);
    expect(histogram.buckets.boundaries).toEqual([...DURATION_BUCKETS_SECONDS]);

    const wait = (await harness().points(METRIC.WAIT_DURATION))[0]?.value as Histogram;
    expect(wait.sum).toBeCloseTo(1.2);

    const ops = await harness().points(METRIC.LEDGER_OPERATION_DURATION);
    expect(ops.map((p) => p.attributes[ATTR.LEDGER_OPERATION]).sort()).toEqual(['claim', 'complete']);
  });

  it('works with scope methods passed around detached', async () => {
    const { recordLedgerOperation, handlerStarted, handlerFinished, setParamsHash, end, run } =
      observer().startCall(start());
    expect(run(() => 7)).toBe(7);
    recordLedgerOperation('lookup', 0.002);
    handlerStarted();
    handlerFinished();
    setParamsHash('cd'.repeat(32));
    end({ outcome: 'replayed' });
    expect((await harness().points(METRIC.LEDGER_OPERATION_DURATION))[0]?.attributes).toEqual({
      [ATTR.LEDGER_OPERATION]: 'lookup',
    });
    expect(onlySpan().attributes[ATTR.PARAMS_HASH]).toBe(hashKey('cd'.repeat(32), SECRET));
  });

  it('tracks handlers in flight', async () => {
    const scope = observer().startCall(start());
    scope.handlerStarted();
    expect((await harness().points(METRIC.RUNS_IN_FLIGHT))[0]?.value).toBe(1);
    scope.handlerFinished();
    scope.end({ outcome: 'executed' });
    expect((await harness().points(METRIC.RUNS_IN_FLIGHT))[0]?.value).toBe(0);
  });

  it('returns the in-flight count to zero when a call ends without handlerFinished', async () => {
    const scope = observer().startCall(start());
    scope.handlerStarted();
    scope.end({ outcome: 'failed', error: new Error('x') });
    expect((await harness().points(METRIC.RUNS_IN_FLIGHT))[0]?.value).toBe(0);
  });
});
