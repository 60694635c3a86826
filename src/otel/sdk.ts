import { createRequire } from 'node:module';
import * as otelApi from '@opentelemetry/api';
import type { LogRecordExporter, LogRecordProcessor } from '@opentelemetry/sdk-logs';
import type { PeriodicExportingMetricReader, PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ToolLedgerError } from '../contract/errors.js';
import { loadLogsApi } from '../telemetry/logs-api.js';

/**
 * The two package layouts of the OpenTelemetry JS SDK this bootstrap runs on. `3.x` (sdk-node 0.30x, Node 22.15+):
 * `@opentelemetry/sdk-trace` replaces `sdk-trace-base`, the logs API is part of `@opentelemetry/api` 1.10, and
 * span processors take `{ exporter }`. `2.x` (sdk-node 0.2xx): `sdk-trace-base`, `@opentelemetry/api-logs`, and
 * span processors take the exporter itself.
 */
export type SdkLine = '2.x' | '3.x';

type Constructor<T, A extends unknown[] = []> = new (...args: A) => T;

/** What `startTelemetry` builds with, whichever line is installed. */
export interface OtelSdk {
  readonly line: SdkLine;
  readonly NodeSDK: typeof NodeSDK;
  readonly PeriodicExportingMetricReader: typeof PeriodicExportingMetricReader;
  spanProcessor(kind: 'simple' | 'batch', exporter: SpanExporter): SpanProcessor;
  logRecordProcessor(kind: 'simple' | 'batch', exporter: LogRecordExporter): LogRecordProcessor;
  readonly console: {
    readonly traces: Constructor<SpanExporter>;
    readonly metrics: Constructor<PushMetricExporter>;
    readonly logs: Constructor<LogRecordExporter>;
  };
  readonly httpJson: {
    readonly traces: Constructor<SpanExporter>;
    readonly metrics: Constructor<PushMetricExporter>;
    readonly logs: Constructor<LogRecordExporter>;
  };
  /** Unregisters the global LoggerProvider from the logs API this line registers it with. */
  disableLogs(): void;
}

// The packages the bootstrap needs, per line. The 2.x ones carry version ranges in the install hint because a bare
// `npm install @opentelemetry/sdk-logs` now fetches 3.x, which needs @opentelemetry/api 1.10.
const REQUIRED: Record<SdkLine, readonly { name: string; spec: string }[]> = {
  '3.x': [
    { name: '@opentelemetry/sdk-node', spec: '@opentelemetry/sdk-node' },
    { name: '@opentelemetry/sdk-trace', spec: '@opentelemetry/sdk-trace' },
    { name: '@opentelemetry/sdk-metrics', spec: '@opentelemetry/sdk-metrics' },
    { name: '@opentelemetry/sdk-logs', spec: '@opentelemetry/sdk-logs' },
    { name: '@opentelemetry/exporter-trace-otlp-http', spec: '@opentelemetry/exporter-trace-otlp-http' },
    { name: '@opentelemetry/exporter-metrics-otlp-http', spec: '@opentelemetry/exporter-metrics-otlp-http' },
    { name: '@opentelemetry/exporter-logs-otlp-http', spec: '@opentelemetry/exporter-logs-otlp-http' },
  ],
  '2.x': [
    { name: '@opentelemetry/sdk-node', spec: '@opentelemetry/sdk-node@"<0.300"' },
    { name: '@opentelemetry/sdk-trace-base', spec: '@opentelemetry/sdk-trace-base@^2' },
    { name: '@opentelemetry/sdk-metrics', spec: '@opentelemetry/sdk-metrics@^2' },
    { name: '@opentelemetry/sdk-logs', spec: '@opentelemetry/sdk-logs@"<1"' },
    { name: '@opentelemetry/api-logs', spec: '@opentelemetry/api-logs@"<1"' },
    {
      name: '@opentelemetry/exporter-trace-otlp-http',
      spec: '@opentelemetry/exporter-trace-otlp-http@"<0.300"',
    },
    {
      name: '@opentelemetry/exporter-metrics-otlp-http',
      spec: '@opentelemetry/exporter-metrics-otlp-http@"<0.300"',
    },
    {
      name: '@opentelemetry/exporter-logs-otlp-http',
      spec: '@opentelemetry/exporter-logs-otlp-http@"<0.300"',
    },
  ],
};

/**
 * The line of the installed SDK, read from the installed @opentelemetry/api: the 3.x packages require api 1.10
 * (which has the logs API) and the 2.x ones api < 1.10, so the api decides even before any SDK package is found.
 */
export function sdkLine(): SdkLine {
  return (otelApi as { logs?: unknown }).logs === undefined ? '2.x' : '3.x';
}

function canResolve(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch {
    return false;
  }
}

let loaded: OtelSdk | undefined;

/**
 * Loads the SDK packages of the installed line, at the first `startTelemetry`: loading them when
 * `tool-ledger/otel` is imported would turn a missing package into a bare ERR_MODULE_NOT_FOUND.
 * @throws ToolLedgerError CONFIG_INVALID naming the `npm install` line for the packages that are missing.
 */
export function loadSdk(): OtelSdk {
  if (loaded) return loaded;
  const line = sdkLine();
  const missing = REQUIRED[line].filter(({ name }) => !canResolve(name));
  if (missing.length > 0) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `tool-ledger/otel needs the OpenTelemetry SDK packages ${missing.map((p) => p.name).join(', ')} (the SDK ${line} line, chosen from what is installed), which could not be found; install them: npm install ${missing.map((p) => p.spec).join(' ')}`,
    );
  }
  const require = createRequire(import.meta.url);
  // biome-ignore lint/suspicious/noExplicitAny: a loaded package is typed by the type-only imports at the top
  const load = (name: string): Record<string, any> => {
    try {
      return require(name);
    } catch (error) {
      throw new ToolLedgerError(
        'CONFIG_INVALID',
        `tool-ledger/otel could not load ${name} (SDK ${line} line): ${error instanceof Error ? error.message : String(error)}. Reinstall it so its version matches @opentelemetry/sdk-node: npm install ${REQUIRED[line].map((p) => p.spec).join(' ')}`,
        { cause: error },
      );
    }
  };
  const trace = load(line === '3.x' ? '@opentelemetry/sdk-trace' : '@opentelemetry/sdk-trace-base');
  const logs = load('@opentelemetry/sdk-logs');
  const metrics = load('@opentelemetry/sdk-metrics');
  const node = load('@opentelemetry/sdk-node');
  const logsApi = line === '3.x' ? loadLogsApi() : (load('@opentelemetry/api-logs') as never);
  const SpanProcessors = {
    simple: trace.SimpleSpanProcessor as Constructor<SpanProcessor, [unknown]>,
    batch: trace.BatchSpanProcessor as Constructor<SpanProcessor, [unknown]>,
  };
  const LogProcessors = {
    simple: logs.SimpleLogRecordProcessor as Constructor<LogRecordProcessor, [unknown]>,
    batch: logs.BatchLogRecordProcessor as Constructor<LogRecordProcessor, [unknown]>,
  };
  loaded = {
    line,
    NodeSDK: node.NodeSDK,
    PeriodicExportingMetricReader: metrics.PeriodicExportingMetricReader,
    // 3.x span processors take an options object; 2.x ones the exporter. Log processors take options on both.
    spanProcessor: (kind, exporter) => new SpanProcessors[kind](line === '3.x' ? { exporter } : exporter),
    logRecordProcessor: (kind, exporter) => new LogProcessors[kind]({ exporter }),
    console: {
      traces: trace.ConsoleSpanExporter,
      metrics: metrics.ConsoleMetricExporter,
      logs: logs.ConsoleLogRecordExporter,
    },
    httpJson: {
      traces: load('@opentelemetry/exporter-trace-otlp-http').OTLPTraceExporter,
      metrics: load('@opentelemetry/exporter-metrics-otlp-http').OTLPMetricExporter,
      logs: load('@opentelemetry/exporter-logs-otlp-http').OTLPLogExporter,
    },
    disableLogs: () => (logsApi as { logs?: { disable(): void } } | undefined)?.logs?.disable(),
  };
  return loaded;
}
