import { diag } from '@opentelemetry/api';

const reported = new Set<string>();

/**
 * Runs a piece of telemetry work so that it can never change the tool call it describes: any exception is
 * swallowed and reported once per `what` through the OpenTelemetry diagnostic logger (not per call, so a broken
 * exporter or redactor cannot flood the application's logs).
 */
export function safeExecute<T>(what: string, fn: () => T): T | undefined {
  try {
    return fn();
  } catch (error) {
    reportOnce(what, error);
    return undefined;
  }
}

export function reportOnce(what: string, error: unknown): void {
  if (reported.has(what)) return;
  reported.add(what);
  // The error's message may hold personal data, so only its type reaches the diagnostic log.
  const type = error instanceof Error ? error.name : typeof error;
  diag.warn(`tool-ledger telemetry: ${what} failed (${type}); the tool call is unaffected`);
}

/** Warns once per message, for configuration problems that would otherwise repeat on every call. */
export function warnOnce(message: string): void {
  if (reported.has(message)) return;
  reported.add(message);
  diag.warn(`tool-ledger telemetry: ${message}`);
}
