import { createRequire } from 'node:module';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { LogRecordExporter } from '@opentelemetry/sdk-logs';
import type { PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ToolLedgerError } from '../contract/errors.js';
import type { ProtocolChoice, Signal } from './env.js';

interface ExporterKinds {
  traces: SpanExporter;
  metrics: PushMetricExporter;
  logs: LogRecordExporter;
}

type Constructor<T> = new () => T;

/** The class each package exports, by signal; the http, proto and grpc packages all use the same names. */
const CLASS_NAME: Record<Signal, string> = {
  traces: 'OTLPTraceExporter',
  metrics: 'OTLPMetricExporter',
  logs: 'OTLPLogExporter',
};

const PACKAGE: Record<Signal, Record<'http/protobuf' | 'grpc', string>> = {
  traces: {
    'http/protobuf': '@opentelemetry/exporter-trace-otlp-proto',
    grpc: '@opentelemetry/exporter-trace-otlp-grpc',
  },
  metrics: {
    'http/protobuf': '@opentelemetry/exporter-metrics-otlp-proto',
    grpc: '@opentelemetry/exporter-metrics-otlp-grpc',
  },
  logs: {
    'http/protobuf': '@opentelemetry/exporter-logs-otlp-proto',
    grpc: '@opentelemetry/exporter-logs-otlp-grpc',
  },
};

const HTTP_JSON: { [S in Signal]: Constructor<ExporterKinds[S]> } = {
  traces: OTLPTraceExporter,
  metrics: OTLPMetricExporter,
  logs: OTLPLogExporter,
};

/**
 * The http/protobuf and grpc exporters are optional peers, loaded only when a protocol variable asks for them:
 * most applications never install them, and `startTelemetry` stays synchronous.
 */
function loadOptional<S extends Signal>(signal: S, choice: ProtocolChoice): Constructor<ExporterKinds[S]> {
  const protocol = choice.protocol as 'http/protobuf' | 'grpc';
  const name = PACKAGE[signal][protocol];
  let loaded: Record<string, unknown>;
  try {
    loaded = createRequire(import.meta.url)(name) as Record<string, unknown>;
  } catch (error) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `${choice.variable}=${protocol} needs the package ${name}, which could not be loaded; install it (npm install ${name}) or set ${choice.variable} to http/json.`,
      { cause: error },
    );
  }
  const exporter = loaded[CLASS_NAME[signal]];
  if (typeof exporter !== 'function') {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `${name} does not export ${CLASS_NAME[signal]}; install a release of the 0.2xx line that matches @opentelemetry/sdk-node.`,
    );
  }
  return exporter as Constructor<ExporterKinds[S]>;
}

function exporterClass<S extends Signal>(signal: S, choice: ProtocolChoice): Constructor<ExporterKinds[S]> {
  return choice.protocol === 'http/json' ? HTTP_JSON[signal] : loadOptional(signal, choice);
}

/**
 * One OTLP exporter per wanted signal, over each signal's chosen protocol; endpoint, headers, compression and
 * timeouts come from the exporters' own OTEL_* variables. Every package is loaded before any exporter is made, so
 * a missing one fails the start with nothing half-built.
 */
export function createExporters(
  choices: Readonly<Record<Signal, ProtocolChoice>>,
  wanted: Readonly<Record<Signal, boolean>>,
): Partial<ExporterKinds> {
  const Traces = wanted.traces ? exporterClass('traces', choices.traces) : undefined;
  const Metrics = wanted.metrics ? exporterClass('metrics', choices.metrics) : undefined;
  const Logs = wanted.logs ? exporterClass('logs', choices.logs) : undefined;
  return {
    ...(Traces ? { traces: new Traces() } : {}),
    ...(Metrics ? { metrics: new Metrics() } : {}),
    ...(Logs ? { logs: new Logs() } : {}),
  };
}
