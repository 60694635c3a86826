/** Reads the OTEL_* settings this bootstrap interprets itself; the exporters and the SDK read the rest. */
export interface OtelEnv {
  readonly serviceName: string | undefined;
  /** True when any OTLP endpoint variable is set, generic or per signal. */
  readonly hasOtlpEndpoint: boolean;
  readonly tracesExporterNone: boolean;
  readonly metricsExporterNone: boolean;
  readonly logsExporterNone: boolean;
  readonly metricExportIntervalMillis: number | undefined;
  readonly metricExportTimeoutMillis: number | undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function positiveInt(value: string | undefined): number | undefined {
  const n = Number(nonEmpty(value));
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

function saysNone(value: string | undefined): boolean {
  return (nonEmpty(value) ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .includes('none');
}

export function readOtelEnv(env: NodeJS.ProcessEnv = process.env): OtelEnv {
  return {
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME),
    hasOtlpEndpoint: [
      env.OTEL_EXPORTER_OTLP_ENDPOINT,
      env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
      env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
      env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT,
    ].some((v) => nonEmpty(v) !== undefined),
    tracesExporterNone: saysNone(env.OTEL_TRACES_EXPORTER),
    metricsExporterNone: saysNone(env.OTEL_METRICS_EXPORTER),
    logsExporterNone: saysNone(env.OTEL_LOGS_EXPORTER),
    metricExportIntervalMillis: positiveInt(env.OTEL_METRIC_EXPORT_INTERVAL),
    metricExportTimeoutMillis: positiveInt(env.OTEL_METRIC_EXPORT_TIMEOUT),
  };
}
