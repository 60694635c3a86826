import { createRequire } from 'node:module';
import type { LogRecordExporter } from '@opentelemetry/sdk-logs';
import type { PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ToolLedgerError } from '../contract/errors.js';
import type { ExporterName, ProtocolChoice, Signal } from './env.js';
import type { OtelSdk } from './sdk.js';

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

/**
 * The http/protobuf and grpc exporters are optional peers, loaded only when a protocol variable asks for them:
 * most applications never install them, and `startTelemetry` stays synchronous.
 */
function loadOptional<S extends Signal>(
  sdk: OtelSdk,
  signal: S,
  choice: ProtocolChoice,
): Constructor<ExporterKinds[S]> {
  const protocol = choice.protocol as 'http/protobuf' | 'grpc';
  const name = PACKAGE[signal][protocol];
  let loaded: Record<string, unknown>;
  try {
    loaded = createRequire(import.meta.url)(name) as Record<string, unknown>;
  } catch (error) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `${choice.variable}=${protocol} needs the package ${name}, which could not be loaded; install it (npm install ${installSpec(sdk, name)}) or set ${choice.variable} to http/json.`,
      { cause: error },
    );
  }
  const exporter = loaded[CLASS_NAME[signal]];
  if (typeof exporter !== 'function') {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `${name} does not export ${CLASS_NAME[signal]}; install the release that matches @opentelemetry/sdk-node: npm install ${installSpec(sdk, name)}`,
    );
  }
  return exporter as Constructor<ExporterKinds[S]>;
}

/** The SDK 2.x exporters are the 0.2xx releases; a bare name would fetch the 3.x line's 0.30x. */
function installSpec(sdk: OtelSdk, name: string): string {
  return sdk.line === '2.x' ? `${name}@"<0.300"` : name;
}

function otlpClass<S extends Signal>(
  sdk: OtelSdk,
  signal: S,
  choice: ProtocolChoice,
): Constructor<ExporterKinds[S]> {
  return choice.protocol === 'http/json'
    ? (sdk.httpJson[signal] as Constructor<ExporterKinds[S]>)
    : loadOptional(sdk, signal, choice);
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
  sdk: OtelSdk,
  protocols: Readonly<Record<Signal, ProtocolChoice>>,
  names: Readonly<Record<Signal, readonly ExporterName[]>>,
): Exporters {
  const classesOf = <S extends Signal>(signal: S) =>
    names[signal].map((name) => ({
      name,
      Exporter:
        name === 'console'
          ? (sdk.console[signal] as Constructor<ExporterKinds[S]>)
          : otlpClass(sdk, signal, protocols[signal]),
    }));
  const classes = { traces: classesOf('traces'), metrics: classesOf('metrics'), logs: classesOf('logs') };
  const build = <T>(list: readonly { name: ExporterName; Exporter: Constructor<T> }[]) =>
    list.map(({ name, Exporter }) => ({ name, exporter: new Exporter() }));
  return { traces: build(classes.traces), metrics: build(classes.metrics), logs: build(classes.logs) };
}
