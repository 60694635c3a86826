import type { InstrumentationConfig } from '@opentelemetry/instrumentation';
import type { TelemetryOptions } from '../../telemetry/options.js';

/** Options of `ToolLedgerMcpInstrumentation`. */
export interface ToolLedgerMcpInstrumentationConfig extends InstrumentationConfig {
  /**
   * How calls are recorded: content capture, the redactor, key handling. The providers come from
   * registerInstrumentations / NodeSDK, or the globals.
   * @default {} (the same defaults as `createLedger({ telemetry })`)
   */
  readonly telemetry?: Omit<TelemetryOptions, 'tracerProvider' | 'meterProvider' | 'loggerProvider'>;
}
