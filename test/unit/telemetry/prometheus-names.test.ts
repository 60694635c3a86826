import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { createOtelObserver } from '../../../src/telemetry/observer.js';
import {
  METRIC,
  PROMETHEUS_METRIC,
  PROMETHEUS_METRIC_IN_PROCESS,
} from '../../../src/telemetry/vocabulary.js';
import { PullReader } from '../../support/telemetry-harness.js';

describe('Prometheus names', () => {
  it('are the ones the vocabulary documents, as @opentelemetry/exporter-prometheus writes them', async () => {
    // Prepare: one call that touches every instrument
    const reader = new PullReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const observer = createOtelObserver({ meterProvider });
    const scope = observer.startCall({
      tool: 'send_invoice',
      kind: 'mutation',
      tenant: 'acme',
      key: 'k',
      user: undefined,
      toolCallId: undefined,
      input: {},
    });
    scope.recordLedgerOperation('claim', 0.002);
    scope.handlerStarted();
    scope.handlerFinished();
    scope.end({ outcome: 'executed', executionSeconds: 0.1, waitedMs: 5 });
    observer.unsavedResults?.('send_invoice', 1);
    // A ledger with an approval tool hands the observer its count of calls awaiting a decision.
    observer.approvalsWaiting?.({
      schema: 'tool_ledger',
      read: async () => [{ tenant: undefined, waiting: 1, oldestSeconds: 30 }],
    });

    // Act
    const { resourceMetrics } = await reader.collect();
    const text = new PrometheusSerializer().serialize(resourceMetrics);

    // Assess
    const families = new Set([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => `${m[1]} ${m[2]}`));
    families.delete('target_info gauge');
    const names = PROMETHEUS_METRIC_IN_PROCESS;
    expect(families).toEqual(
      new Set([
        `${names.TOOL_CALLS} counter`,
        `${names.EXECUTE_TOOL_DURATION} histogram`,
        `${names.WAIT_DURATION} histogram`,
        `${names.LEDGER_OPERATION_DURATION} histogram`,
        `${names.RUNS_IN_FLIGHT} gauge`,
        `${names.UNSAVED_RESULTS} gauge`,
        `${names.APPROVALS_WAITING} gauge`,
        `${names.APPROVALS_OLDEST_AGE} gauge`,
      ]),
    );
    expect(text).toMatch(/tool_ledger_tool_calls_total\{[^}]*tool_ledger_idempotency_outcome="executed"/);
    expect(text).toMatch(
      /tool_ledger_ledger_operation_duration_bucket\{tool_ledger_ledger_operation="claim",[^}]*le="0.0025"\} 1/,
    );
    await meterProvider.shutdown();
  });

  it('over OTLP gain the unit suffix of seconds-valued instruments and nothing else', () => {
    // The Collector and Prometheus's OTLP receiver append `_seconds` for unit `s`; counters get `_total` in both.
    for (const key of Object.keys(METRIC) as (keyof typeof METRIC)[]) {
      const inProcess = PROMETHEUS_METRIC_IN_PROCESS[key];
      const seconds = key.endsWith('DURATION') || key === 'APPROVALS_OLDEST_AGE';
      expect(PROMETHEUS_METRIC[key]).toBe(seconds ? `${inProcess}_seconds` : inProcess);
      expect(inProcess.replace(/_total$/, '')).toBe(METRIC[key].replace(/\./g, '_'));
    }
  });
});
