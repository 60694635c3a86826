import type { LoggerProvider } from '@opentelemetry/api-logs';
import type { MeterProvider, TracerProvider } from '@opentelemetry/api';

/**
 * Scrubs personal data before anything leaves the process. Implementations must be pure and fast; an exception
 * thrown here drops the affected attribute, it never fails the tool call.
 */
export interface Redactor {
  /** Free text: error messages, log bodies, keys. */
  redactText(text: string): string;
  /** Structured values: arguments and results. Returns a scrubbed copy. */
  redactValue(value: unknown): unknown;
}

/** Telemetry options of `createLedger({ telemetry })`. */
export interface TelemetryOptions {
  /**
   * Record scrubbed tool arguments and results as `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result`.
   * @default false
   */
  readonly captureContent?: boolean;
  /**
   * The scrubber for content, error messages, log bodies and keys.
   * @default the built-in field-rule + redact-pii redactor
   */
  readonly redactor?: Redactor;
  /**
   * How idempotency keys are emitted. `raw`: as given. `hash`: only as an HMAC under
   * `tool_ledger.idempotency.key_hash`. `auto`: raw unless the redactor finds personal data in the key.
   * @default 'auto'
   */
  readonly keyMode?: 'auto' | 'raw' | 'hash';
  /**
   * HMAC secret for hashed keys.
   * @default process.env.TOOL_LEDGER_KEY_HASH_SECRET
   */
  readonly keyHashSecret?: string;
  /**
   * Tenants whose id may appear on metrics (as `tool_ledger.tenant.id`). Others are never put on metrics.
   * @default []
   */
  readonly metricTenants?: readonly string[];
  /** @default the global tracer provider, looked up at each call */
  readonly tracerProvider?: TracerProvider;
  /** @default the global meter provider, looked up lazily */
  readonly meterProvider?: MeterProvider;
  /** @default the global logger provider, looked up at each call */
  readonly loggerProvider?: LoggerProvider;
}
