import {
  type MeterProvider,
  metrics,
  ProxyTracerProvider,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
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

/** The provider a global tracer proxy delegates to while no SDK is registered: the API's no-op. */
const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();

/** True only for the API's own proxy with nothing registered behind it (another API copy's is never matched). */
function isNoopTracerProvider(provider: TracerProvider): boolean {
  return provider instanceof ProxyTracerProvider && provider.getDelegate() === NOOP_TRACER_PROVIDER;
}

/** The shape of the logs API's proxy (api-logs and @opentelemetry/api 1.10 alike), which neither exports. */
interface LoggerProviderProxy {
  _getDelegate(): LoggerProvider;
}
const noopLoggerProviders = new WeakMap<object, LoggerProvider>();

/**
 * True only for the logs API's proxy with nothing registered behind it: it delegates to the same no-op provider
 * as a fresh proxy of its class does. Any other provider, or a doubt, counts as a real one.
 */
function isNoopLoggerProvider(provider: LoggerProvider): boolean {
  const proxy = provider as Partial<LoggerProviderProxy>;
  const ProxyClass = (provider as { constructor?: unknown }).constructor;
  // Only the API's own class is ever constructed here; a renamed or wrapped one counts as a real provider.
  if (typeof proxy._getDelegate !== 'function' || typeof ProxyClass !== 'function') return false;
  if (ProxyClass.name !== 'ProxyLoggerProvider') return false;
  let noop = noopLoggerProviders.get(ProxyClass);
  if (noop === undefined) {
    noop = new (ProxyClass as new () => LoggerProviderProxy)()._getDelegate();
    noopLoggerProviders.set(ProxyClass, noop);
  }
  return proxy._getDelegate() === noop;
}

export interface Signals {
  tracer(): Tracer;
  /**
   * False only when neither a span nor a log record of a call would be kept: no tracer provider and no logger
   * provider configured, and none registered with the API (its no-op proxies answer). A call then makes no span
   * and skips what only spans and records carry (the key check and the HMACs); metrics do not need them. Never
   * throws: a doubt counts as kept.
   */
  spansOrLogsKept(): boolean;
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
    spansOrLogsKept: () => {
      try {
        if (options.tracerProvider !== undefined || options.loggerProvider !== undefined) return true;
        if (!isNoopTracerProvider(trace.getTracerProvider())) return true;
        const api = loadLogsApi();
        return api !== undefined && !isNoopLoggerProvider(api.logs.getLoggerProvider());
      } catch {
        return true;
      }
    },
    meterProvider,
    instruments: () => instrumentsFor(meterProvider()),
    logger: () => {
      if (options.loggerProvider) return loggerFor(options.loggerProvider);
      const api = loadLogsApi();
      return api ? loggerFor(api.logs.getLoggerProvider()) : undefined;
    },
  };
}
