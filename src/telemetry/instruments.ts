import { createNoopMeter, type Histogram, type MeterProvider, type UpDownCounter } from '@opentelemetry/api';
import { type CallSums, callSums } from './call-sums.js';
import { DURATION_BUCKETS_SECONDS, INSTRUMENTATION_SCOPE, METRIC, UNIT } from './vocabulary.js';

export interface Instruments {
  readonly executeDuration: Histogram;
  readonly waitDuration: Histogram;
  readonly ledgerOperationDuration: Histogram;
  readonly unsavedResults: UpDownCounter;
  /** `tool_ledger.tool.calls` and `tool_ledger.runs.in_flight`: counted in this process, observed at collection. */
  readonly sums: CallSums;
  /** False for the API's no-op meter (no meter provider registered): nothing will ever read these instruments. */
  readonly recording: boolean;
}

export function createInstruments(provider: MeterProvider): Instruments {
  const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
  const seconds = (description: string) => ({
    description,
    unit: UNIT.SECONDS,
    advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] },
  });
  return {
    executeDuration: meter.createHistogram(
      METRIC.EXECUTE_TOOL_DURATION,
      seconds('Handler run time of calls that executed the tool (outcome executed or failed).'),
    ),
    waitDuration: meter.createHistogram(
      METRIC.WAIT_DURATION,
      seconds('Time a duplicate call waited for a parallel execution of the same key.'),
    ),
    ledgerOperationDuration: meter.createHistogram(
      METRIC.LEDGER_OPERATION_DURATION,
      seconds('Client-side duration of ledger statements (claim, complete, lookup).'),
    ),
    unsavedResults: meter.createUpDownCounter(METRIC.UNSAVED_RESULTS, {
      description:
        'Outcomes whose completion failed, kept in this process until the database takes them (bounded by maxUnsavedResults).',
      unit: UNIT.RESULTS,
    }),
    sums: callSums(provider),
    recording: meter !== createNoopMeter(),
  };
}
