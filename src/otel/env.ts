import { ToolLedgerError } from '../contract/errors.js';

/** The OTLP transports of the specification, as `OTEL_EXPORTER_OTLP_PROTOCOL` spells them. */
export const OTLP_PROTOCOLS = ['http/json', 'http/protobuf', 'grpc'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];
export type Signal = 'traces' | 'metrics' | 'logs';

/** The exporters this bootstrap can build, as `OTEL_{TRACES,METRICS,LOGS}_EXPORTER` name them. */
export const EXPORTER_NAMES = ['otlp', 'console'] as const;
export type ExporterName = (typeof EXPORTER_NAMES)[number];

/** A signal's protocol and the variable that chose it (none for the default). */
export interface ProtocolChoice {
  readonly protocol: OtlpProtocol;
  readonly variable: string | undefined;
}

/** Reads the OTEL_* settings this bootstrap interprets itself; the exporters and the SDK read the rest. */
export interface OtelEnv {
  readonly serviceName: string | undefined;
  /** True when any OTLP endpoint variable is set, generic or per signal. */
  readonly hasOtlpEndpoint: boolean;
  /**
   * Each signal's exporters: its `OTEL_*_EXPORTER` list (empty for `none`); when unset, `otlp` if an OTLP endpoint
   * or another signal's `otlp` asks for it, else none.
   */
  readonly exporters: Readonly<Record<Signal, readonly ExporterName[]>>;
  /** True when an `OTEL_*_EXPORTER` variable asks for an exporter (not only `none`). */
  readonly exporterRequested: boolean;
  readonly metricExportIntervalMillis: number | undefined;
  readonly metricExportTimeoutMillis: number | undefined;
  readonly protocols: Readonly<Record<Signal, ProtocolChoice>>;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function positiveInt(value: string | undefined): number | undefined {
  const n = Number(nonEmpty(value));
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

const EXPORTER_VARIABLE: Record<Signal, string> = {
  traces: 'OTEL_TRACES_EXPORTER',
  metrics: 'OTEL_METRICS_EXPORTER',
  logs: 'OTEL_LOGS_EXPORTER',
};

function exportersFor(env: NodeJS.ProcessEnv, signal: Signal): ExporterName[] | undefined {
  const variable = EXPORTER_VARIABLE[signal];
  const value = nonEmpty(env[variable]);
  if (value === undefined) return undefined;
  const names = value.split(',').map((name) => name.trim().toLowerCase());
  // `none` anywhere in the list turns the signal off, as @opentelemetry/sdk-node reads its metrics and logs lists.
  if (names.includes('none')) return [];
  const unknown = names.filter((name) => !EXPORTER_NAMES.some((known) => known === name));
  if (unknown.length > 0) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `${variable}=${JSON.stringify(value)} names an exporter this bootstrap does not build (${unknown.join(', ')}); use otlp, console or none, or wire other exporters with @opentelemetry/sdk-node yourself.`,
    );
  }
  return [...new Set(names as ExporterName[])];
}

// The default is http/json rather than the specification's http/protobuf because the exporter-*-otlp-http packages
// are the ones the bootstrap requires; the protobuf and gRPC exporters are optional and loaded only on request.
const DEFAULT_PROTOCOL: OtlpProtocol = 'http/json';

function protocolFor(env: NodeJS.ProcessEnv, signal: Signal): ProtocolChoice {
  const specific = `OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_PROTOCOL`;
  for (const variable of [specific, 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const value = nonEmpty(env[variable]);
    if (value === undefined) continue;
    const protocol = OTLP_PROTOCOLS.find((p) => p === value.toLowerCase());
    if (protocol === undefined) {
      throw new ToolLedgerError(
        'CONFIG_INVALID',
        `${variable}=${JSON.stringify(value)} is not an OTLP protocol; set it to ${OTLP_PROTOCOLS.join(', ')} or unset it (the default is ${DEFAULT_PROTOCOL}).`,
      );
    }
    return { protocol, variable };
  }
  return { protocol: DEFAULT_PROTOCOL, variable: undefined };
}

/** @throws ToolLedgerError CONFIG_INVALID for an exporter or OTLP protocol variable with an unknown value. */
export function readOtelEnv(env: NodeJS.ProcessEnv = process.env): OtelEnv {
  const exporters = {
    traces: exportersFor(env, 'traces'),
    metrics: exportersFor(env, 'metrics'),
    logs: exportersFor(env, 'logs'),
  };
  const hasOtlpEndpoint = [
    env.OTEL_EXPORTER_OTLP_ENDPOINT,
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
    env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT,
  ].some((v) => nonEmpty(v) !== undefined);
  // A signal left unset exports over OTLP only when OTLP is asked for somewhere (an endpoint, or another
  // signal's `otlp`): `OTEL_TRACES_EXPORTER=console` alone must not send metrics and logs to localhost:4318.
  const otlpWanted = hasOtlpEndpoint || Object.values(exporters).some((names) => names?.includes('otlp'));
  const anyListed = Object.values(exporters).some((names) => names !== undefined);
  const fallback: ExporterName[] = otlpWanted || !anyListed ? ['otlp'] : [];
  return {
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME),
    hasOtlpEndpoint,
    exporters: {
      traces: exporters.traces ?? fallback,
      metrics: exporters.metrics ?? fallback,
      logs: exporters.logs ?? fallback,
    },
    exporterRequested: Object.values(exporters).some((names) => names !== undefined && names.length > 0),
    metricExportIntervalMillis: positiveInt(env.OTEL_METRIC_EXPORT_INTERVAL),
    metricExportTimeoutMillis: positiveInt(env.OTEL_METRIC_EXPORT_TIMEOUT),
    protocols: {
      traces: protocolFor(env, 'traces'),
      metrics: protocolFor(env, 'metrics'),
      logs: protocolFor(env, 'logs'),
    },
  };
}
