import { createRequire } from 'node:module';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ConsoleLogRecordExporter, type LogRecordExporter } from '@opentelemetry/sdk-logs';
import { ConsoleMetricExporter, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { ConsoleSpanExporter, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ToolLedgerError } from '../contract/errors.js';
import type { ExporterName, ProtocolChoice, Signal } from './env.js';

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

const CONSOLE: { [S in Signal]: Constructor<ExporterKinds[S]> } = {
  traces: ConsoleSpanExporter,
  metrics: ConsoleMetricExporter,
  logs: ConsoleLogRecordExporter,
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

function otlpClass<S extends Signal>(signal: S, choice: ProtocolChoice): Constructor<ExporterKinds[S]> {
  return choice.protocol === 'http/json' ? HTTP_JSON[signal] : loadOptional(signal, choice);
}

/** An exporter and the name it was asked for by (console exporters want a processor that does not batch). */
export interface NamedExporter<T> {
  readonly name: ExporterName;
  readonly exporter: T;
}

export type Exporters = { readonly [S in Signal]: readonly NamedExporter<ExporterKinds[S]>[] };

/**
 * The exporters each signal's `OTEL_*_EXPORTER` list names, OTLP ones over the signal's chosen protocol; endpoint,
 * headers, compression and timeouts come from the exporters' own OTEL_* variables. Every package is loaded before
 * any exporter is made, so a missing one fails the start with nothing half-built.
 */
export function createExporters(
  protocols: Readonly<Record<Signal, ProtocolChoice>>,
  names: Readonly<Record<Signal, readonly ExporterName[]>>,
): Exporters {
  const classesOf = <S extends Signal>(signal: S) =>
    names[signal].map((name) => ({
      name,
      Exporter: name === 'console' ? CONSOLE[signal] : otlpClass(signal, protocols[signal]),
    }));
  const classes = { traces: classesOf('traces'), metrics: classesOf('metrics'), logs: classesOf('logs') };
  const build = <T>(list: readonly { name: ExporterName; Exporter: Constructor<T> }[]) =>
    list.map(({ name, Exporter }) => ({ name, exporter: new Exporter() }));
  return { traces: build(classes.traces), metrics: build(classes.metrics), logs: build(classes.logs) };
}
