import { context, metrics, propagation, trace } from '@opentelemetry/api';
import type { LogRecordProcessor } from '@opentelemetry/sdk-logs';
import type { IMetricReader } from '@opentelemetry/sdk-metrics';
import type { NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ToolLedgerError } from '../contract/errors.js';
import { type OtelEnv, readOtelEnv } from './env.js';
import { createExporters } from './exporters.js';
import { MemorySpans } from './memory-spans.js';
import { loadSdk } from './sdk.js';
import { formatSummary, type SpanSummary, summarizeSpan } from './summary.js';

export type { SpanSummary } from './summary.js';

/** Where telemetry goes: OTLP exporters, or spans kept in memory for a printed summary. */
export type TelemetryMode = 'otlp' | 'memory';

/** Options of {@link startTelemetry}. */
export interface StartTelemetryOptions {
  /**
   * The `service.name` resource attribute. `OTEL_SERVICE_NAME`, when set, wins, so operators can rename a
   * deployment without a code change.
   */
  readonly serviceName: string;
  /**
   * `otlp`: traces, metrics and logs go to the exporters `OTEL_{TRACES,METRICS,LOGS}_EXPORTER` name: `otlp` (the
   * default), `console` or `none`. OTLP exporters take endpoint, protocol, headers, timeouts and compression from
   * the standard `OTEL_EXPORTER_OTLP_*` variables; http/json unless `OTEL_EXPORTER_OTLP_PROTOCOL` says
   * http/protobuf or grpc, which need the matching `@opentelemetry/exporter-*-otlp-proto` or `-grpc` packages.
   * `memory`: only spans are kept, in memory (the first 10 000), for `summary()`; nothing leaves the process.
   * `auto`: `otlp` when an `OTEL_EXPORTER_OTLP_*ENDPOINT` variable is set or an `OTEL_*_EXPORTER` variable names an
   * exporter, `memory` otherwise.
   * @default 'auto'
   */
  readonly mode?: 'auto' | TelemetryMode;
  /**
   * Instrumentations to enable with the SDK, such as `new PgInstrumentation()` so the ledger's SQL shows up as
   * child spans of each tool call.
   * @default []
   */
  readonly instrumentations?: NodeSDKConfiguration['instrumentations'];
  /**
   * How often metrics are exported in `otlp` mode.
   * @default OTEL_METRIC_EXPORT_INTERVAL, else 60000
   */
  readonly metricExportIntervalMillis?: number;
}

/** A running SDK, from {@link startTelemetry}. */
export interface Telemetry {
  readonly mode: TelemetryMode;
  readonly serviceName: string;
  /** Finished spans so far, oldest first; empty in `otlp` mode. */
  finishedSpans(): readonly SpanSummary[];
  /** A short readable listing of the finished spans (for demos); in `otlp` mode, where the spans went. */
  summary(): string;
  /**
   * Flushes every pending span, metric and log record, stops the SDK and unregisters its global providers.
   * Safe to call twice.
   */
  shutdown(): Promise<void>;
}

let running: Telemetry | undefined;

/** Where each signal goes, for `summary()`: `traces otlp (http/json), metrics none, logs console`. */
function describeExports(env: OtelEnv): string {
  const signals = ['traces', 'metrics', 'logs'] as const;
  return signals
    .map((signal) => {
      const names = env.exporters[signal].map((name) =>
        name === 'otlp' ? `otlp (${env.protocols[signal].protocol})` : name,
      );
      return `${signal} ${names.length > 0 ? names.join(' and ') : 'none'}`;
    })
    .join(', ');
}

/**
 * Starts the OpenTelemetry Node SDK for an application that uses tool-ledger: batch span and log processors and a
 * periodic metric reader, each with an OTLP exporter (OTLP/HTTP JSON by default) unless the `OTEL_*_EXPORTER`
 * variables say otherwise, registered as the global providers. tool-ledger's ledgers pick them up on their next
 * call, whenever they were created. Honours the standard `OTEL_*` variables, including `OTEL_SDK_DISABLED`,
 * `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, `OTEL_BLRP_*`,
 * `OTEL_EXPORTER_OTLP_[SIGNAL_]PROTOCOL` and `OTEL_{TRACES,METRICS,LOGS}_EXPORTER`.
 * Works with the SDK 3.x packages (sdk-node 0.30x, `sdk-trace`) and the 2.x ones (sdk-node 0.2xx, `sdk-trace-base`,
 * `api-logs`), whichever the installed `@opentelemetry/api` pairs with; they are loaded here, not on import.
 * @throws ToolLedgerError CONFIG_INVALID when already running, for an exporter or OTLP protocol it cannot build,
 * or when an SDK package it needs (or the exporter package a protocol needs) is not installed; the message names
 * the `npm install` line.
 */
export function startTelemetry(options: StartTelemetryOptions): Telemetry {
  if (running) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `startTelemetry() is already running for service "${running.serviceName}"; call its shutdown() before starting again.`,
    );
  }
  const env = readOtelEnv();
  const sdkParts = loadSdk();
  const serviceName = env.serviceName ?? options.serviceName;
  const requested = options.mode ?? 'auto';
  const exporting = env.hasOtlpEndpoint || env.exporterRequested;
  const mode: TelemetryMode = requested === 'auto' ? (exporting ? 'otlp' : 'memory') : requested;

  const memory = mode === 'memory' ? new MemorySpans() : undefined;
  const spanProcessors: SpanProcessor[] = [];
  const metricReaders: IMetricReader[] = [];
  const logRecordProcessors: LogRecordProcessor[] = [];
  if (memory) {
    spanProcessors.push(memory);
  } else {
    const exporters = createExporters(sdkParts, env.protocols, env.exporters);
    for (const { name, exporter } of exporters.traces) {
      // Console output is for looking at while developing: printed as each span ends, not in batches.
      spanProcessors.push(sdkParts.spanProcessor(name === 'console' ? 'simple' : 'batch', exporter));
    }
    for (const { exporter } of exporters.metrics) {
      metricReaders.push(
        new sdkParts.PeriodicExportingMetricReader({
          exporter,
          exportIntervalMillis:
            options.metricExportIntervalMillis ?? env.metricExportIntervalMillis ?? 60_000,
          ...(env.metricExportTimeoutMillis === undefined
            ? {}
            : { exportTimeoutMillis: env.metricExportTimeoutMillis }),
        }),
      );
    }
    for (const { name, exporter } of exporters.logs) {
      logRecordProcessors.push(
        sdkParts.logRecordProcessor(name === 'console' ? 'simple' : 'batch', exporter),
      );
    }
  }

  const sdk = new sdkParts.NodeSDK({
    serviceName,
    spanProcessors,
    metricReaders,
    logRecordProcessors,
    instrumentations: options.instrumentations ?? [],
  });
  sdk.start();

  let stopped: Promise<void> | undefined;
  const telemetry: Telemetry = {
    mode,
    serviceName,
    finishedSpans: () => (memory ? memory.spans().map(summarizeSpan) : []),
    summary: () =>
      memory
        ? formatSummary(serviceName, memory.spans().map(summarizeSpan))
        : `${serviceName}: ${describeExports(env)} (see OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_*_EXPORTER).`,
    shutdown() {
      stopped ??= sdk.shutdown().finally(() => {
        // The SDK leaves its shut-down providers registered; clearing them lets a later startTelemetry() register.
        trace.disable();
        metrics.disable();
        sdkParts.disableLogs();
        propagation.disable();
        context.disable();
        if (running === telemetry) running = undefined;
      });
      return stopped;
    },
  };
  running = telemetry;
  return telemetry;
}
