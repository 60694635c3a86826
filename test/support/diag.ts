import { type DiagLogger, DiagLogLevel, diag } from '@opentelemetry/api';

/** Collects the OpenTelemetry diagnostic warnings (where tool-ledger says what to fix) into `warnings`. */
export function captureDiagWarnings(warnings: string[]): void {
  const logger: DiagLogger = {
    error: () => {},
    warn: (message) => warnings.push(message),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  };
  diag.setLogger(logger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}
