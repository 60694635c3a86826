import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import type { LoggerProvider } from '@opentelemetry/api-logs';

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

/**
 * Telemetry options of `createLedger({ telemetry })`. A value that cannot work (an unknown `keyMode`, a
 * `metricTenants` that is not a list of strings, ...) makes `createLedger` throw `CONFIG_INVALID`.
 */
export interface TelemetryOptions {
  /**
   * Record scrubbed tool arguments and results as `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result`.
   * @default false
   */
  readonly captureContent?: boolean;
  /**
   * The scrubber for content, error messages, log bodies and keys. A redactor that throws drops the attribute
   * it was scrubbing; the call is unaffected.
   * @default createRedactor(): field-name rules plus tool-ledger's linear-time free-text detection
   */
  readonly redactor?: Redactor;
  /**
   * Largest captured argument or result, in UTF-16 code units of its scrubbed JSON; longer values are cut and end
   * with `…[truncated]`.
   * @default 4096
   */
  readonly maxContentLength?: number;
  /**
   * How idempotency keys are emitted. `raw`: as given (only for keys known to be opaque, such as UUIDs).
   * `hash`: only as an HMAC under `tool_ledger.idempotency.key_hash` (see `hashKey`). `auto`: raw when the
   * redactor leaves the key unchanged, hashed otherwise. Without a secret, keys that would be hashed are left out
   * and a warning is logged once.
   * @default 'auto'
   */
  readonly keyMode?: 'auto' | 'raw' | 'hash';
  /**
   * HMAC secret for hashed keys. Support needs the same secret to compute a key's hash.
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
