import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import type { LoggerProvider } from '@opentelemetry/api-logs';
import type { CallObserver } from '../../contract/observer.js';
import type { CallTelemetry } from './observe-call.js';
import type { operationMetric } from './operation-metric.js';

/** What one instrumentation instance keeps: its providers, the observer made from them, and what it patched. */
export interface State {
  observer?: CallObserver | undefined;
  tracerProvider?: TracerProvider | undefined;
  meterProvider?: MeterProvider | undefined;
  loggerProvider?: LoggerProvider | undefined;
  commonJsHook?: { unhook(): void } | undefined;
  patched: Set<unknown>;
  spans?: TracerProvider | undefined;
  metric?: ReturnType<typeof operationMetric> | undefined;
  telemetry?: CallTelemetry | undefined;
}

const PLACEHOLDER_PROVIDERS = new Set([
  'ProxyTracerProvider',
  'NoopTracerProvider',
  'NoopMeterProvider',
  'ProxyLoggerProvider',
  'NoopLoggerProvider',
]);

/**
 * registerInstrumentations hands over the global providers as they are at registration, which, before an SDK
 * starts, are placeholders: a no-op meter provider never upgrades, and a logs proxy from another copy of
 * api-logs never gets its delegate. Those are ignored, so the observer keeps looking the globals up per call.
 */
export function explicitProvider<T extends object>(
  provider: T | undefined,
  currentGlobal: unknown,
): T | undefined {
  if (provider === undefined || provider === currentGlobal) return undefined;
  return PLACEHOLDER_PROVIDERS.has(provider.constructor?.name) ? undefined : provider;
}

// Kept outside the instance: InstrumentationBase's constructor calls setConfig and the provider setters before a
// subclass's own fields exist (and field initializers would then reset them).
const states = new WeakMap<object, State>();

export function stateOf(instrumentation: object): State {
  let state = states.get(instrumentation);
  if (state === undefined) {
    state = { patched: new Set() };
    states.set(instrumentation, state);
  }
  return state;
}
