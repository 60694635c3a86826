import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { logs } from '@opentelemetry/api-logs';
import { BatchLogRecordProcessor, type LogRecordProcessor } from '@opentelemetry/sdk-logs';
import { type IMetricReader, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { NodeSDK, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ToolLedgerError } from '../contract/errors.js';
import { type OtelEnv, readOtelEnv } from './env.js';
import { createExporters } from './exporters.js';
import { MemorySpans } from './memory-spans.js';
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
   * `otlp`: traces, metrics and logs go to OTLP exporters (endpoint, protocol, headers, timeouts and compression
   * from the standard `OTEL_EXPORTER_OTLP_*` variables; http/json unless `OTEL_EXPORTER_OTLP_PROTOCOL` says
   * http/protobuf or grpc, which need the matching `@opentelemetry/exporter-*-otlp-proto` or `-grpc` packages).
   * `memory`: only spans are kept, in memory (the first 10 000), for `summary()`; nothing leaves the process.
   * `auto`: `otlp` when an `OTEL_EXPORTER_OTLP_*ENDPOINT` variable is set, `memory` otherwise.
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

function describeProtocols(protocols: OtelEnv['protocols']): string {
  const { traces, metrics, logs } = protocols;
  return traces.protocol === metrics.protocol && metrics.protocol === logs.protocol
    ? traces.protocol
    : `traces ${traces.protocol}, metrics ${metrics.protocol}, logs ${logs.protocol}`;
}

/**
 * Starts the OpenTelemetry Node SDK for an application that uses tool-ledger: batch span and log processors and a
 * periodic metric reader, each with an OTLP exporter (OTLP/HTTP JSON by default), registered as the global
 * providers. tool-ledger's ledgers pick them up on their next call, whenever they were created. Honours the
 * standard `OTEL_*` variables, including `OTEL_SDK_DISABLED`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`,
 * `OTEL_BSP_*`, `OTEL_BLRP_*`, `OTEL_EXPORTER_OTLP_[SIGNAL_]PROTOCOL` and `OTEL_{TRACES,METRICS,LOGS}_EXPORTER=none`.
 * @throws ToolLedgerError CONFIG_INVALID when already running, for an unknown OTLP protocol, or when the exporter
 * package a protocol needs is not installed.
 */
export function startTelemetry(options: StartTelemetryOptions): Telemetry {
  if (running) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `startTelemetry() is already running for service "${running.serviceName}"; call its shutdown() before starting again.`,
    );
  }
  const env = readOtelEnv();
  const serviceName = env.serviceName ?? options.serviceName;
  const requested = options.mode ?? 'auto';
  const mode: TelemetryMode = requested === 'auto' ? (env.hasOtlpEndpoint ? 'otlp' : 'memory') : requested;

  const memory = mode === 'memory' ? new MemorySpans() : undefined;
  const spanProcessors: SpanProcessor[] = [];
  const metricReaders: IMetricReader[] = [];
  const logRecordProcessors: LogRecordProcessor[] = [];
  if (memory) {
    spanProcessors.push(memory);
  } else {
    const exporters = createExporters(env.protocols, {
      traces: !env.tracesExporterNone,
      metrics: !env.metricsExporterNone,
      logs: !env.logsExporterNone,
    });
    if (exporters.traces) spanProcessors.push(new BatchSpanProcessor(exporters.traces));
    if (exporters.metrics) {
      metricReaders.push(
        new PeriodicExportingMetricReader({
          exporter: exporters.metrics,
          exportIntervalMillis:
            options.metricExportIntervalMillis ?? env.metricExportIntervalMillis ?? 60_000,
          ...(env.metricExportTimeoutMillis === undefined
            ? {}
            : { exportTimeoutMillis: env.metricExportTimeoutMillis }),
        }),
      );
    }
    if (exporters.logs) logRecordProcessors.push(new BatchLogRecordProcessor({ exporter: exporters.logs }));
  }

  const sdk = new NodeSDK({
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
        : `${serviceName}: traces, metrics and logs are exported over OTLP (${describeProtocols(env.protocols)}; see OTEL_EXPORTER_OTLP_ENDPOINT).`,
    shutdown() {
      stopped ??= sdk.shutdown().finally(() => {
        // The SDK leaves its shut-down providers registered; clearing them lets a later startTelemetry() register.
        trace.disable();
        metrics.disable();
        logs.disable();
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
