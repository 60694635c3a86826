/**
 * The telemetry contract: every span, attribute, metric and log name tool-ledger emits. Dashboards, alerts and
 * docs/telemetry.md are written against these names, so they change only with a major version.
 *
 * `gen_ai.*` names follow the OpenTelemetry GenAI semantic conventions, which are still experimental; they are
 * copied here as literals rather than imported from the incubating semconv entry point.
 */

import { OUTCOME_INFO, OUTCOMES, type Outcome } from '../contract/outcomes.js';

export const SPAN_NAME_PREFIX = 'execute_tool' as const;
export const INSTRUMENTATION_SCOPE = 'tool-ledger' as const;

export const ATTR = {
  // GenAI semantic conventions (experimental)
  GEN_AI_OPERATION_NAME: 'gen_ai.operation.name',
  GEN_AI_TOOL_NAME: 'gen_ai.tool.name',
  GEN_AI_TOOL_TYPE: 'gen_ai.tool.type',
  GEN_AI_TOOL_CALL_ID: 'gen_ai.tool.call.id',
  GEN_AI_TOOL_CALL_ARGUMENTS: 'gen_ai.tool.call.arguments',
  GEN_AI_TOOL_CALL_RESULT: 'gen_ai.tool.call.result',
  GEN_AI_TOOL_DESCRIPTION: 'gen_ai.tool.description',
  // Stable general conventions
  ERROR_TYPE: 'error.type',
  // tool-ledger's own
  TENANT_ID: 'tool_ledger.tenant.id',
  TOOL_KIND: 'tool_ledger.tool.kind',
  IDEMPOTENCY_KEY: 'tool_ledger.idempotency.key',
  IDEMPOTENCY_KEY_HASH: 'tool_ledger.idempotency.key_hash',
  PARAMS_HASH: 'tool_ledger.idempotency.params_hash',
  ATTEMPT: 'tool_ledger.idempotency.attempt',
  OUTCOME: 'tool_ledger.idempotency.outcome',
  WAITED_MS: 'tool_ledger.idempotency.waited_ms',
  CONFLICT_REASON: 'tool_ledger.conflict.reason',
  REJECTED_REASON: 'tool_ledger.rejected.reason',
  JOB_ID: 'tool_ledger.job.id',
  LINK_TYPE: 'tool_ledger.link.type',
  LEDGER_OPERATION: 'tool_ledger.ledger.operation',
  ERROR_CODE: 'tool_ledger.error.code',
  STEP_NAME: 'tool_ledger.step.name',
  STEP_OUTCOME: 'tool_ledger.step.outcome',
  /** The ledger's schema, on the approval gauges only: they count a schema's rows, not this process's calls. */
  LEDGER_SCHEMA: 'tool_ledger.ledger.schema',
} as const;

/** The span of one recorded step (`ctx.step`), a child of the call's span: `step {name}`. */
export const STEP_SPAN_NAME_PREFIX = 'step' as const;

export const OPERATION_NAME_EXECUTE_TOOL = 'execute_tool' as const;
export const TOOL_TYPE_FUNCTION = 'function' as const;
export const LINK_TYPE_ORIGINAL_EXECUTION = 'original_execution' as const;

// The outcome list lives with the contract, which every view (types, severities, texts) derives from.
export { OUTCOMES, REJECTED_REASONS } from '../contract/outcomes.js';
export const CONFLICT_REASONS = ['params_mismatch', 'user_mismatch'] as const;
export const LEDGER_OPERATIONS = ['claim', 'complete', 'lookup'] as const;
export { STEP_OUTCOMES } from '../contract/observer.js';

export const METRIC = {
  TOOL_CALLS: 'tool_ledger.tool.calls',
  EXECUTE_TOOL_DURATION: 'gen_ai.execute_tool.duration',
  WAIT_DURATION: 'tool_ledger.wait.duration',
  LEDGER_OPERATION_DURATION: 'tool_ledger.ledger.operation.duration',
  RUNS_IN_FLIGHT: 'tool_ledger.runs.in_flight',
  UNSAVED_RESULTS: 'tool_ledger.results.unsaved',
  APPROVALS_WAITING: 'tool_ledger.approvals.waiting',
  APPROVALS_OLDEST_AGE: 'tool_ledger.approvals.oldest_age',
} as const;

/**
 * The names these metrics take in Prometheus when they travel over OTLP: through the Collector's `prometheus` or
 * `prometheusremotewrite` exporter, or Prometheus's own OTLP receiver, with unit suffixes on (their default).
 * Monotonic counters gain `_total`, unit `s` adds `_seconds`, and `{annotation}` units add nothing. The shipped
 * dashboards and alert rules use these names.
 */
export const PROMETHEUS_METRIC = {
  TOOL_CALLS: 'tool_ledger_tool_calls_total',
  EXECUTE_TOOL_DURATION: 'gen_ai_execute_tool_duration_seconds',
  WAIT_DURATION: 'tool_ledger_wait_duration_seconds',
  LEDGER_OPERATION_DURATION: 'tool_ledger_ledger_operation_duration_seconds',
  RUNS_IN_FLIGHT: 'tool_ledger_runs_in_flight',
  UNSAVED_RESULTS: 'tool_ledger_results_unsaved',
  APPROVALS_WAITING: 'tool_ledger_approvals_waiting',
  APPROVALS_OLDEST_AGE: 'tool_ledger_approvals_oldest_age_seconds',
} as const;

/**
 * The names @opentelemetry/exporter-prometheus (an in-process `/metrics` endpoint) writes: it adds `_total` to
 * counters but no unit suffix. Asserted against a real serialization in the tests.
 */
export const PROMETHEUS_METRIC_IN_PROCESS = {
  TOOL_CALLS: 'tool_ledger_tool_calls_total',
  EXECUTE_TOOL_DURATION: 'gen_ai_execute_tool_duration',
  WAIT_DURATION: 'tool_ledger_wait_duration',
  LEDGER_OPERATION_DURATION: 'tool_ledger_ledger_operation_duration',
  RUNS_IN_FLIGHT: 'tool_ledger_runs_in_flight',
  UNSAVED_RESULTS: 'tool_ledger_results_unsaved',
  APPROVALS_WAITING: 'tool_ledger_approvals_waiting',
  APPROVALS_OLDEST_AGE: 'tool_ledger_approvals_oldest_age',
} as const;

/**
 * The gateway's own instruments (a gateway process only, not every ledger process): every admission decision on a
 * tool call, by `tool_ledger.gateway.decision` (allowed, denied, limited) and `tool_ledger.gateway.reason`.
 */
export const GATEWAY_METRIC = {
  DECISIONS: 'tool_ledger.gateway.decisions',
} as const;

/** `GATEWAY_METRIC` as Prometheus names it: a counter, `_total` in process and over OTLP alike. */
export const GATEWAY_PROMETHEUS_METRIC = {
  DECISIONS: 'tool_ledger_gateway_decisions_total',
} as const;

/** The attributes of the gateway's decisions, on its metric and on the call's server span. */
export const GATEWAY_ATTR = {
  DECISION: 'tool_ledger.gateway.decision',
  REASON: 'tool_ledger.gateway.reason',
} as const;

/**
 * The `gen_ai.tool.name` of `tool_ledger.gateway.decisions` for a tool neither the gateway's configuration names
 * nor the upstream listed (within the bound of src/gateway/tool-labels.ts): the metric's series stay bounded
 * whatever names clients call.
 */
export const GATEWAY_OTHER_TOOL = 'other';

/** What the gateway decided about a tool call before it went anywhere. */
export const GATEWAY_DECISIONS = ['allowed', 'denied', 'limited'] as const;

/**
 * Why: `none` for an allowed call; for a denied one the list of the access rule the caller matched nothing in
 * (`role`, `group`, `tenant`) or the claim it lacks (`missing_role`, ...); for a limited one `rate` or `concurrency`.
 */
export const GATEWAY_REASONS = [
  'none',
  'role',
  'group',
  'tenant',
  'missing_role',
  'missing_group',
  'missing_tenant',
  'rate',
  'concurrency',
] as const;

export const LOG_EVENT_NAME = 'tool_ledger.decision' as const;

/** Log severity of each outcome's decision record (OpenTelemetry SeverityNumber values). */
export const SEVERITY = {
  INFO: { number: 9, text: 'INFO' },
  WARN: { number: 13, text: 'WARN' },
  ERROR: { number: 17, text: 'ERROR' },
} as const;

export const OUTCOME_SEVERITY = Object.freeze(
  Object.fromEntries(OUTCOMES.map((outcome) => [outcome, OUTCOME_INFO[outcome].severity])),
) as { readonly [K in Outcome]: (typeof OUTCOME_INFO)[K]['severity'] };

/** Metric units (UCUM; curly-brace annotations are dropped from Prometheus names). */
export const UNIT = {
  SECONDS: 's',
  CALLS: '{call}',
  RUNS: '{run}',
  RESULTS: '{result}',
  DECISIONS: '{decision}',
} as const;

/** `error.type` for errors that carry no stable code or safe class name (the general convention's fallback). */
export const ERROR_TYPE_OTHER = '_OTHER' as const;

/**
 * `error.type` when the tool's own answer is an error (its handler threw, or a stored final failure is replayed),
 * as the GenAI and MCP conventions name it; the error's code or class stays on `tool_ledger.error.code` and the
 * exception event's `exception.type`.
 */
export const ERROR_TYPE_TOOL_ERROR = 'tool_error' as const;

/** Histogram bucket advice in seconds: tool calls range from sub-millisecond replays to minutes-long jobs. */
export const DURATION_BUCKETS_SECONDS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
] as const;

/** Environment variable holding the HMAC secret for hashed keys. */
export const KEY_HASH_SECRET_ENV = 'TOOL_LEDGER_KEY_HASH_SECRET' as const;
