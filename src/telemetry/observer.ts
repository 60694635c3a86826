import { type CallObserver, noopObserver } from '../contract/observer.js';
import type { TelemetryOptions } from './options.js';

// PLACEHOLDER until the OpenTelemetry observer lands (issue 3): emits nothing.
export function createOtelObserver(_options: TelemetryOptions): CallObserver {
  return noopObserver;
}
