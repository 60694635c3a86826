import { type CallObserver, NOOP_SCOPE } from '../contract/observer.js';
import { ApprovalGauges } from './approval-gauges.js';
import { boundedCache, boundedPairCache } from './bounded-cache.js';
import { OtelCallScope } from './call-scope.js';
import { cachedKeyAttributes, resolveSecret } from './key-attributes.js';
import { keyHasher } from './key-hash.js';
import { isAcceptableKey } from './key-policy.js';
import { configuredSecret, type DeploymentSecret } from './key-secret.js';
import { metricLabelsCache } from './metric-labels.js';
import type { ObserverConfig } from './observer-config.js';
import type { TelemetryOptions } from './options.js';
import { createSignals } from './providers.js';
import { createRedactor } from './redact/default-redactor.js';
import { safeExecute } from './safe.js';
import { validateTelemetryOptions } from './validate-options.js';
import { ATTR, SPAN_NAME_PREFIX } from './vocabulary.js';

const DEFAULT_MAX_CONTENT_LENGTH = 4096;

/** Caches the scrubbed form of low-cardinality strings (tenants, log bodies), so that scrubbing them is a lookup. */
function scrubCache(scrub: (text: string) => string): (text: string) => string | undefined {
  return boundedCache((text) => {
    const scrubbed = safeExecute('redactor.redactText', () => scrub(text));
    return typeof scrubbed === 'string' ? scrubbed : undefined;
  });
}

/** Whether a meter provider other than the API's no-op one would take the call's metric points. */
function metricsKept(config: ObserverConfig): boolean {
  try {
    return config.signals.instruments().recording;
  } catch {
    return true;
  }
}

/**
 * The OpenTelemetry observer: one `execute_tool {tool}` span, one `tool_ledger.decision` log record and the
 * tool-ledger metrics per call, scrubbed. Uses only @opentelemetry/api (and api-logs when installed); with no SDK
 * registered a call gets `NOOP_SCOPE` and costs nothing here, and an SDK registered later is picked up on the next
 * call.
 * `deployment` is the key-hash secret a ledger read from its schema (or why it has none); a configured one wins.
 */
export function createOtelObserver(options: TelemetryOptions, deployment?: DeploymentSecret): CallObserver {
  validateTelemetryOptions(options);
  const redactor = options.redactor ?? createRedactor();
  const maxContentLength = options.maxContentLength ?? DEFAULT_MAX_CONTENT_LENGTH;
  const secret = resolveSecret(configuredSecret(options), deployment);
  // Tenants, log-body heads and tool descriptions repeat across calls and share one cache; tool call ids are new
  // on almost every call, so they get their own, where they cannot keep clearing the others' entries.
  const scrubRepeated = scrubCache((text) => redactor.redactText(text));
  const scrubId = scrubCache((text) => redactor.redactText(text));
  const head = (tool: unknown, outcome: unknown) =>
    scrubRepeated(`${SPAN_NAME_PREFIX} ${String(tool)} ${String(outcome)}`);
  const stringHead = boundedPairCache(head);
  const approvalGauges = new ApprovalGauges(options.metricTenants ?? []);
  const config: ObserverConfig = {
    signals: createSignals(options, (provider) => approvalGauges.attach(provider)),
    redactor,
    captureContent: options.captureContent === true,
    maxContentLength,
    keyAttributes: cachedKeyAttributes(options.keyMode ?? 'auto', secret, redactor),
    // Keyed, so a low-entropy input ({email, ssn}) cannot be recovered by hashing candidates.
    paramsHash: boundedCache(keyHasher(secret)),
    metricLabels: metricLabelsCache(new Set(options.metricTenants ?? [])),
    // The ledger's own limits first (1024 characters, no NUL): a tenant it refuses is never scrubbed.
    tenantLabel: (tenant) =>
      typeof tenant === 'string' && tenant.length <= 1024 && !tenant.includes('\u0000')
        ? scrubRepeated(tenant)
        : undefined,
    // Written by the tool's author, not the caller, and constant per tool: one scrub per tool, then a lookup.
    toolDescription: (description) =>
      typeof description === 'string' && description.length > 0 ? scrubRepeated(description) : undefined,
    toolCallId: (id) => (typeof id === 'string' && isAcceptableKey(id) ? scrubId(id) : undefined),
    logBody: (tool, outcome, message) => {
      const scrubbed =
        typeof tool === 'string' && typeof outcome === 'string'
          ? stringHead(tool, outcome)
          : head(tool, outcome);
      if (scrubbed === undefined) return undefined;
      return message === undefined ? scrubbed : `${scrubbed}: ${message}`;
    },
  };
  return {
    startCall: (start) => {
      const spansOrLogs = config.signals.spansOrLogsKept();
      // Nothing registered at all: the call is not observed, and costs nothing here.
      return spansOrLogs || metricsKept(config) ? new OtelCallScope(config, start, spansOrLogs) : NOOP_SCOPE;
    },
    unsavedResults: (tool, delta) =>
      safeExecute('unsaved-results metric', () => {
        config.signals.instruments().unsavedResults.add(delta, { [ATTR.GEN_AI_TOOL_NAME]: tool });
      }),
    approvalsWaiting: (source) => approvalGauges.add(source, config.signals.meterProvider()),
  };
}
