import type { Attributes, MeterProvider, ObservableResult } from '@opentelemetry/api';
import { INSTRUMENTATION_SCOPE, METRIC, OUTCOMES, UNIT } from './vocabulary.js';

/** One series of an in-process sum: the attributes it is exported with and its current value. */
export interface SumSeries {
  readonly attributes: Attributes;
  value: number;
}

/** The SDK's default cardinality limit, with the same overflow series past it. */
const MAX_SERIES = 2000;
const OVERFLOW_KEY = '\u0000overflow';
const OVERFLOW_ATTRIBUTES: Attributes = Object.freeze({ 'otel.metric.overflow': true });

/**
 * A sum kept in this process and read by the SDK at each collection. Adding to it is a property write, where a
 * synchronous instrument's `add` sorts and serializes the attributes to find its series on every call (about as
 * costly as the rest of the call's metrics together).
 */
export class InProcessSum {
  readonly #series = new Map<string, SumSeries>();

  /** The series for `key`, whose attributes are `attributes` (the same for every call with that key). */
  series(key: string, attributes: Attributes): SumSeries {
    const found = this.#series.get(key);
    if (found !== undefined) return found;
    const full = this.#series.size >= MAX_SERIES;
    const created = full
      ? (this.#series.get(OVERFLOW_KEY) ?? { attributes: OVERFLOW_ATTRIBUTES, value: 0 })
      : { attributes, value: 0 };
    this.#series.set(full ? OVERFLOW_KEY : key, created);
    return created;
  }

  readonly observe = (result: ObservableResult): void => {
    for (const { value, attributes } of this.#series.values()) result.observe(value, attributes);
  };
}

export interface CallSums {
  /** `tool_ledger.tool.calls`, by tool, kind, outcome (and allow-listed tenant). */
  readonly calls: InProcessSum;
  /** `tool_ledger.runs.in_flight`, by tool and kind (and allow-listed tenant). */
  readonly inFlight: InProcessSum;
}

/**
 * One set of sums per meter provider for the whole process, shared by every ledger (and every copy of this
 * module, hence the global symbol): two observable instruments of the same name on one meter would each report
 * the same series, and the SDK would take their values as successive totals of one series.
 */
const REGISTRY_KEY = Symbol.for('tool-ledger.call-sums.v1');

function registry(): WeakMap<MeterProvider, CallSums> {
  const holder = globalThis as { [REGISTRY_KEY]?: WeakMap<MeterProvider, CallSums> };
  holder[REGISTRY_KEY] ??= new WeakMap();
  return holder[REGISTRY_KEY];
}

/** The process's sums for `provider`, registered as its observable instruments on first use. */
export function callSums(provider: MeterProvider): CallSums {
  const sums = registry();
  const existing = sums.get(provider);
  if (existing !== undefined) return existing;
  const created: CallSums = { calls: new InProcessSum(), inFlight: new InProcessSum() };
  const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
  meter
    .createObservableCounter(METRIC.TOOL_CALLS, {
      description: `Tool calls by outcome (${OUTCOMES.join(', ')}).`,
      unit: UNIT.CALLS,
    })
    .addCallback(created.calls.observe);
  meter
    .createObservableUpDownCounter(METRIC.RUNS_IN_FLIGHT, {
      description: 'Tool handlers running in this process.',
      unit: UNIT.RUNS,
    })
    .addCallback(created.inFlight.observe);
  sums.set(provider, created);
  return created;
}
