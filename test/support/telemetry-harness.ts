import { type Attributes, context, metrics, trace } from '@opentelemetry/api';
import { logs } from '@opentelemetry/api-logs';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode } from '@opentelemetry/core';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  MeterProvider,
  type MetricData,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach } from 'vitest';

/** A metric reader the test pulls from on demand. */
export class PullReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}

  async metrics(): Promise<MetricData[]> {
    const { resourceMetrics } = await this.collect();
    return resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
  }
}

/** In-memory exporters for all three signals, optionally registered as the global providers. */
export class TelemetryHarness {
  readonly spans = new InMemorySpanExporter();
  readonly logExporter = new InMemoryLogRecordExporter();
  readonly reader = new PullReader();
  readonly tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(this.spans)],
  });
  readonly meterProvider = new MeterProvider({ readers: [this.reader] });
  readonly loggerProvider = new LoggerProvider({
    processors: [new SimpleLogRecordProcessor({ exporter: this.logExporter })],
  });

  /** Registers the providers globally (with an AsyncLocalStorage context manager). */
  registerGlobal(): this {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(this.tracerProvider);
    metrics.setGlobalMeterProvider(this.meterProvider);
    logs.setGlobalLoggerProvider(this.loggerProvider);
    return this;
  }

  /** The providers as explicit telemetry options. */
  providers() {
    return {
      tracerProvider: this.tracerProvider,
      meterProvider: this.meterProvider,
      loggerProvider: this.loggerProvider,
    };
  }

  finishedSpans() {
    return this.spans.getFinishedSpans();
  }

  logRecords() {
    return this.logExporter.getFinishedLogRecords();
  }

  async metric(name: string): Promise<MetricData | undefined> {
    return (await this.reader.metrics()).find((m) => m.descriptor.name === name);
  }

  async points(name: string): Promise<DataPoint<number | Histogram>[]> {
    return ((await this.metric(name))?.dataPoints ?? []) as DataPoint<number | Histogram>[];
  }

  async shutdown(): Promise<void> {
    await Promise.allSettled([
      this.tracerProvider.shutdown(),
      this.meterProvider.shutdown(),
      this.loggerProvider.shutdown(),
    ]);
  }
}

/**
 * A fresh harness registered globally before each test of the enclosing suite, and shut down (globals reset)
 * after it. Returns a getter, since each test gets its own harness.
 */
export function useGlobalHarness(): () => TelemetryHarness {
  let harness: TelemetryHarness | undefined;
  beforeEach(() => {
    harness = new TelemetryHarness().registerGlobal();
  });
  afterEach(async () => {
    await harness?.shutdown();
    resetGlobals();
  });
  return () => {
    if (!harness) throw new Error('useGlobalHarness(): the harness exists only inside a test');
    return harness;
  };
}

/**
 * Makes harnesses for the tests of the enclosing suite (registered or not, as each test chooses); after each test,
 * every harness it made is shut down and the globals are reset.
 */
export function useHarnesses(): () => TelemetryHarness {
  const made: TelemetryHarness[] = [];
  afterEach(async () => {
    await Promise.all(made.map((h) => h.shutdown()));
    made.length = 0;
    resetGlobals();
  });
  return () => {
    const harness = new TelemetryHarness();
    made.push(harness);
    return harness;
  };
}

/** Clears every global OpenTelemetry registration, so the next test starts from "no SDK". */
export function resetGlobals(): void {
  trace.disable();
  metrics.disable();
  logs.disable();
  context.disable();
}

export function attributesOf(points: readonly { attributes: Attributes }[]): Attributes[] {
  return points.map((p) => p.attributes);
}

/** A span exporter whose every export fails, as when the collector is down. */
export function failingSpanExporter(): SpanExporter {
  return {
    export: (_spans, done) => done({ code: ExportResultCode.FAILED, error: new Error('collector down') }),
    shutdown: async () => {},
  };
}

/** A span processor that throws when a span starts and when it ends. */
export function throwingSpanProcessor(): SpanProcessor {
  return {
    onStart: () => {
      throw new Error('onStart bug');
    },
    onEnd: () => {
      throw new Error('onEnd bug');
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
}
