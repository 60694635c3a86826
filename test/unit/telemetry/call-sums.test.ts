import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  type DataPoint,
  MeterProvider,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import type { CallStart } from '../../../src/contract/observer.js';
import { InProcessSum } from '../../../src/telemetry/call-sums.js';
import { createOtelObserver } from '../../../src/telemetry/observer.js';
import { ATTR, METRIC } from '../../../src/telemetry/vocabulary.js';
import { resetGlobals, TelemetryHarness, useGlobalHarness } from '../../support/telemetry-harness.js';

const start = (tool = 'refund_payment'): CallStart => ({
  tool,
  kind: 'mutation',
  tenant: 'acme',
  key: 'inv_2024_0042',
  user: undefined,
  toolCallId: undefined,
  input: {},
});

const observer = () => createOtelObserver({ keyHashSecret: 'test-secret' });

const harness = useGlobalHarness();

describe('tool calls and handlers in flight, counted in the process', () => {
  it('add up across ledgers that share a meter provider', async () => {
    // Prepare: two ledgers' observers, the same tool
    const first = observer();
    const second = observer();

    // Act
    first.startCall(start()).end({ outcome: 'executed' });
    second.startCall(start()).end({ outcome: 'executed' });
    const running = [first.startCall(start()), second.startCall(start())];
    for (const scope of running) scope.handlerStarted();

    // Assess: one series each, holding both ledgers' counts
    const calls = await harness().points(METRIC.TOOL_CALLS);
    expect(calls.map((p) => [p.attributes[ATTR.OUTCOME], p.value])).toEqual([['executed', 2]]);
    expect((await harness().points(METRIC.RUNS_IN_FLIGHT)).map((p) => p.value)).toEqual([2]);
    running[0]?.end({ outcome: 'executed' });
    expect((await harness().points(METRIC.RUNS_IN_FLIGHT)).map((p) => p.value)).toEqual([1]);
  });

  it('are exported per interval to a reader that asks for delta temporality', async () => {
    // Prepare: a provider whose reader wants deltas
    class DeltaReader extends MetricReader {
      constructor() {
        super({ aggregationTemporalitySelector: () => AggregationTemporality.DELTA });
      }
      protected override async onForceFlush(): Promise<void> {}
      protected override async onShutdown(): Promise<void> {}
    }
    const reader = new DeltaReader();
    const provider = new MeterProvider({ readers: [reader] });
    const ledger = createOtelObserver({ keyHashSecret: 'test-secret', meterProvider: provider });
    const collectCalls = async () => {
      const { resourceMetrics } = await reader.collect();
      const metric = resourceMetrics.scopeMetrics
        .flatMap((s) => s.metrics)
        .find((m) => m.descriptor.name === METRIC.TOOL_CALLS);
      return (metric?.dataPoints as DataPoint<number>[] | undefined)?.map((p) => p.value);
    };

    // Act and assess: one call, then two
    ledger.startCall(start()).end({ outcome: 'executed' });
    expect(await collectCalls()).toEqual([1]);
    ledger.startCall(start()).end({ outcome: 'executed' });
    ledger.startCall(start()).end({ outcome: 'executed' });
    expect(await collectCalls()).toEqual([2]);
    await provider.shutdown();
  });

  it('follow a meter provider registered later, starting from zero', async () => {
    // Prepare: a call counted by the first provider
    const ledger = observer();
    ledger.startCall(start()).end({ outcome: 'executed' });
    resetGlobals();
    const later = new TelemetryHarness().registerGlobal();

    // Act
    ledger.startCall(start()).end({ outcome: 'replayed' });

    // Assess: each provider saw only its own calls
    expect((await later.points(METRIC.TOOL_CALLS)).map((p) => [p.attributes[ATTR.OUTCOME], p.value])).toEqual(
      [['replayed', 1]],
    );
    expect(
      (await harness().points(METRIC.TOOL_CALLS)).map((p) => [p.attributes[ATTR.OUTCOME], p.value]),
    ).toEqual([['executed', 1]]);
    expect(metrics.getMeterProvider()).toBe(later.meterProvider);
    await later.shutdown();
  });
});

describe('InProcessSum', () => {
  it('puts series past 2,000 into the overflow series, as the SDK does', () => {
    const sum = new InProcessSum();
    for (let i = 0; i < 2000; i++) sum.series(`s${i}`, { i }).value += 1;
    sum.series('one more', { i: 'one more' }).value += 1;
    sum.series('and another', { i: 'and another' }).value += 1;
    const observed: Array<[number, unknown]> = [];
    sum.observe({ observe: (value, attributes) => observed.push([value, attributes]) });
    expect(observed).toHaveLength(2001);
    expect(observed.at(-1)).toEqual([2, { 'otel.metric.overflow': true }]);
  });
});
