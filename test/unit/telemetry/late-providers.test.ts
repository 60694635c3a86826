import { metrics, trace } from '@opentelemetry/api';
import { logs } from '@opentelemetry/api-logs';
import { describe, expect, it } from 'vitest';
import type { CallObserver } from '../../../src/contract/observer.js';
import { createOtelObserver } from '../../../src/telemetry/observer.js';
import { METRIC } from '../../../src/telemetry/vocabulary.js';
import { resetGlobals, useHarnesses } from '../../support/telemetry-harness.js';

// The observer is created (and used) before any SDK exists, the way a library is imported before the
// application's telemetry bootstrap runs.
const observer: CallObserver = createOtelObserver({});

function call(key: string): void {
  const scope = observer.startCall({
    tool: 'send_invoice',
    kind: 'mutation',
    tenant: 'acme',
    key,
    user: undefined,
    toolCallId: undefined,
    input: {},
  });
  scope.handlerStarted();
  scope.recordLedgerOperation('claim', 0.001);
  scope.handlerFinished();
  scope.end({ outcome: 'executed', executionSeconds: 0.01 });
}

const newHarness = useHarnesses();

describe('providers registered after import', () => {
  it('are used for spans, logs and metrics', async () => {
    // Prepare: a call while nothing is registered, so every signal resolved to its no-op first
    call('before-sdk');
    expect(trace.getTracerProvider()).toBeDefined();

    // Act: the application registers its SDK, then calls again
    const harness = newHarness().registerGlobal();
    call('after-sdk');

    // Assess
    expect(harness.finishedSpans().map((s) => s.name)).toEqual(['execute_tool send_invoice']);
    expect(harness.logRecords()).toHaveLength(1);
    expect((await harness.points(METRIC.TOOL_CALLS))[0]?.value).toBe(1);
    expect(await harness.metric(METRIC.LEDGER_OPERATION_DURATION)).toBeDefined();
    expect(await harness.metric(METRIC.RUNS_IN_FLIGHT)).toBeDefined();
  });

  it('follow a provider that is replaced', async () => {
    const first = newHarness().registerGlobal();
    call('first');
    resetGlobals();
    const second = newHarness().registerGlobal();
    call('second');

    expect(first.finishedSpans()).toHaveLength(1);
    expect(second.finishedSpans()).toHaveLength(1);
    expect(second.logRecords()).toHaveLength(1);
    expect((await second.points(METRIC.TOOL_CALLS))[0]?.value).toBe(1);
    expect((await first.points(METRIC.TOOL_CALLS))[0]?.value).toBe(1);
    expect(metrics.getMeterProvider()).toBe(second.meterProvider);
    expect(logs.getLoggerProvider()).toBe(second.loggerProvider);
  });
});
