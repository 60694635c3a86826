// OpenTelemetry JS 3.x replaced @opentelemetry/sdk-trace-base with @opentelemetry/sdk-trace: BasicTracerProvider
// is TracerProvider, and the span processors take `{ exporter, ...config }` instead of `(exporter, config)`.
// vitest.config.ts points the suites' sdk-trace-base imports here when only the 3.x package is installed (the
// newest-majors lane), so one set of tests runs against both SDK lines.
import * as trace from '@opentelemetry/sdk-trace';

export * from '@opentelemetry/sdk-trace';
export { TracerProvider as BasicTracerProvider } from '@opentelemetry/sdk-trace';

const options = (exporterOrOptions, config) =>
  typeof exporterOrOptions?.export === 'function'
    ? { ...config, exporter: exporterOrOptions }
    : exporterOrOptions;

export class SimpleSpanProcessor extends trace.SimpleSpanProcessor {
  constructor(exporterOrOptions, config) {
    super(options(exporterOrOptions, config));
  }
}

export class BatchSpanProcessor extends trace.BatchSpanProcessor {
  constructor(exporterOrOptions, config) {
    super(options(exporterOrOptions, config));
  }
}
