import { type MeterProvider, metrics, type Tracer, type TracerProvider, trace } from '@opentelemetry/api';
import type { Logger, LoggerProvider } from '@opentelemetry/api-logs';
import { createInstruments, type Instruments } from './instruments.js';
import { loadLogsApi } from './logs-api.js';
import type { TelemetryOptions } from './options.js';
import { INSTRUMENTATION_SCOPE } from './vocabulary.js';

/**
 * Memoizes a value derived from a provider, rebuilt when the provider changes. The global providers are looked up
 * on every call (a cheap property read) because a meter taken from the no-op provider before the application
 * registers its SDK stays a no-op forever; the tracer and logger proxies also go stale when a provider is
 * disabled and another one registered (which tests and hot-reloading servers do).
 */
function memoByProvider<P extends object, T>(build: (provider: P) => T): (provider: P) => T {
  let last: P | undefined;
  let value: T | undefined;
  return (provider) => {
    if (provider !== last || value === undefined) {
      value = build(provider);
      last = provider;
    }
    return value;
  };
}

export interface Signals {
  tracer(): Tracer;
  /** The meter provider in use now: the configured one, or the global one looked up at each call. */
  meterProvider(): MeterProvider;
  instruments(): Instruments;
  /** Undefined when @opentelemetry/api-logs is not installed. */
  logger(): Logger | undefined;
}

/**
 * `onMeterProvider` is told of each meter provider the instruments are made for (the first one, and each one
 * registered later), so that instruments outside `Instruments` follow the provider too.
 */
export function createSignals(
  options: TelemetryOptions,
  onMeterProvider?: (provider: MeterProvider) => void,
): Signals {
  const tracerFor = memoByProvider((provider: TracerProvider) => provider.getTracer(INSTRUMENTATION_SCOPE));
  const instrumentsFor = memoByProvider((provider: MeterProvider) => {
    onMeterProvider?.(provider);
    return createInstruments(provider);
  });
  const meterProvider = () => options.meterProvider ?? metrics.getMeterProvider();
  const loggerFor = memoByProvider((provider: LoggerProvider) => provider.getLogger(INSTRUMENTATION_SCOPE));
  return {
    tracer: () => tracerFor(options.tracerProvider ?? trace.getTracerProvider()),
    meterProvider,
    instruments: () => instrumentsFor(meterProvider()),
    logger: () => {
      if (options.loggerProvider) return loggerFor(options.loggerProvider);
      const api = loadLogsApi();
      return api ? loggerFor(api.logs.getLoggerProvider()) : undefined;
    },
  };
}
