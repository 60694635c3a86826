// Opt-in SDK bootstrap, published as `tool-ledger/otel`. Everything exported here is public API. The SDK
// packages it imports are optional peer dependencies: only applications that import this entry point need them.

export type { SpanSummary, StartTelemetryOptions, Telemetry, TelemetryMode } from './start-telemetry.js';
export { startTelemetry } from './start-telemetry.js';
