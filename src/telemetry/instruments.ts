import type { Counter, Histogram, Meter, UpDownCounter } from '@opentelemetry/api';
import { DURATION_BUCKETS_SECONDS, METRIC, OUTCOMES, UNIT } from './vocabulary.js';

export interface Instruments {
  readonly calls: Counter;
  readonly executeDuration: Histogram;
  readonly waitDuration: Histogram;
  readonly ledgerOperationDuration: Histogram;
  readonly runsInFlight: UpDownCounter;
  readonly unsavedResults: UpDownCounter;
}

export function createInstruments(meter: Meter): Instruments {
  const seconds = (description: string) => ({
    description,
    unit: UNIT.SECONDS,
    advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] },
  });
  return {
    calls: meter.createCounter(METRIC.TOOL_CALLS, {
      description: `Tool calls by outcome (${OUTCOMES.join(', ')}).`,
      unit: UNIT.CALLS,
    }),
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
    runsInFlight: meter.createUpDownCounter(METRIC.RUNS_IN_FLIGHT, {
      description: 'Tool handlers running in this process.',
      unit: UNIT.RUNS,
    }),
    unsavedResults: meter.createUpDownCounter(METRIC.UNSAVED_RESULTS, {
      description:
        'Outcomes whose completion failed, kept in this process until the database takes them (bounded by maxUnsavedResults).',
      unit: UNIT.RESULTS,
    }),
  };
}
