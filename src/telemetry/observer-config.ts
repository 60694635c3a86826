import type { Attributes } from '@opentelemetry/api';
import type { MetricLabels } from './metric-labels.js';
import type { Redactor } from './options.js';
import type { Signals } from './providers.js';

/** Resolved telemetry settings shared by every call scope of one ledger. */
export interface ObserverConfig {
  readonly signals: Signals;
  readonly redactor: Redactor;
  readonly captureContent: boolean;
  readonly maxContentLength: number;
  /** The key attributes of a call (raw key, its HMAC, or none); see `keyAttributes`. */
  keyAttributes(key: string | undefined): Readonly<Attributes>;
  /** The parameter hash as it leaves the process: its HMAC under the key secret. */
  paramsHash(hash: string): string | undefined;
  /** The tool call id, checked like a key (length, characters) and then scrubbed; undefined when refused. */
  toolCallId(id: unknown): string | undefined;
  /** The metric attributes of a tool, kind and tenant (the tenant only when in `metricTenants`), made once. */
  metricLabels(tool: string, kind: string, tenant: unknown): MetricLabels;
  /** The tool's description as it may appear on spans (scrubbed, computed once per tool), or undefined. */
  toolDescription(description: unknown): string | undefined;
  /** The tenant as it may appear on spans and logs (scrubbed), or undefined. */
  tenantLabel(tenant: unknown): string | undefined;
  /** The scrubbed body of a decision log record, or undefined when scrubbing failed. */
  logBody(tool: unknown, outcome: unknown, scrubbedMessage: string | undefined): string | undefined;
}
