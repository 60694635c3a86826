import {
  type Attributes,
  type Context,
  INVALID_SPANID,
  INVALID_TRACEID,
  type Span,
  SpanStatusCode,
  TraceFlags,
} from '@opentelemetry/api';
import type { LogRecord } from '@opentelemetry/api-logs';
import type { Decision, SpanRef } from '../contract/observer.js';
import { OUTCOME_INFO } from '../contract/outcomes.js';
import { put } from './attributes.js';
import { captureContent } from './content.js';
import type { ErrorInfo } from './error-info.js';
import type { MetricLabels } from './metric-labels.js';
import type { ObserverConfig } from './observer-config.js';
import {
  ATTR,
  ERROR_TYPE_TOOL_ERROR,
  LINK_TYPE_ORIGINAL_EXECUTION,
  LOG_EVENT_NAME,
  OUTCOME_SEVERITY,
  OUTCOMES,
  SEVERITY,
} from './vocabulary.js';

/**
 * What a call's decision writes, one function per signal: the attributes it adds, the span's end, the log record
 * and the metrics. `OtelCallScope.end` runs each in its own try/catch, so a fault in one never stops the others.
 */

export const KNOWN_OUTCOMES = new Set<string>(OUTCOMES);
const HEX_TRACE_ID = /^[0-9a-f]{32}$/;
const HEX_SPAN_ID = /^[0-9a-f]{16}$/;

function isValidRef(ref: SpanRef | undefined): ref is SpanRef {
  return (
    ref !== undefined &&
    typeof ref.traceId === 'string' &&
    typeof ref.spanId === 'string' &&
    HEX_TRACE_ID.test(ref.traceId) &&
    HEX_SPAN_ID.test(ref.spanId) &&
    // What isSpanContextValid adds to these patterns: the all-zero ids are invalid.
    ref.traceId !== INVALID_TRACEID &&
    ref.spanId !== INVALID_SPANID
  );
}

/** `tool_error` when the tool's own answer is an error, else the ledger error's code or class; none on success. */
function errorType(decision: Decision, error: ErrorInfo | undefined): string | undefined {
  return decision.toolError === true ? ERROR_TYPE_TOOL_ERROR : error?.type;
}

/** The exception of a failed call as a plain object, never the error itself (the SDK would copy it unscrubbed). */
function exceptionOf(error: ErrorInfo) {
  return {
    name: error.type,
    ...(error.message === undefined ? {} : { message: error.message }),
    ...(error.stack === undefined ? {} : { stack: error.stack }),
  };
}

/** Puts what the decision says into `decided`, then into `attributes` (shared by the span and the log record). */
export function collectDecisionAttributes(
  decided: Attributes,
  attributes: Attributes,
  decision: Decision,
  error: ErrorInfo | undefined,
): void {
  put(decided, ATTR.OUTCOME, decision.outcome);
  if (Number.isInteger(decision.attempt)) put(decided, ATTR.ATTEMPT, decision.attempt);
  if (decision.waitedMs !== undefined) put(decided, ATTR.WAITED_MS, Math.round(decision.waitedMs));
  put(decided, ATTR.CONFLICT_REASON, decision.conflictReason);
  put(decided, ATTR.REJECTED_REASON, decision.rejectedReason);
  put(decided, ATTR.JOB_ID, decision.jobId);
  if (error) put(decided, ATTR.ERROR_CODE, error.code);
  put(decided, ATTR.ERROR_TYPE, errorType(decision, error));
  Object.assign(attributes, decided);
}

/** Ends the call's span with the decision's attributes, the result (when content is captured), the link and status. */
export function endCallSpan(
  span: Span,
  config: ObserverConfig,
  decided: Attributes,
  decision: Decision,
  success: boolean,
  error: ErrorInfo | undefined,
): void {
  try {
    // A span the sampler dropped keeps nothing: its attributes, links and status would only cost a result scrub.
    if (!span.isRecording()) return;
    span.setAttributes(decided);
    if (config.captureContent && success && decision.result !== undefined) {
      const result = captureContent(decision.result, config.redactor, config.maxContentLength);
      if (result !== undefined) span.setAttribute(ATTR.GEN_AI_TOOL_CALL_RESULT, result);
    }
    const original = decision.original;
    if (isValidRef(original) && typeof span.addLink === 'function') {
      span.addLink({
        context: {
          traceId: original.traceId,
          spanId: original.spanId,
          traceFlags: TraceFlags.SAMPLED,
          isRemote: true,
        },
        attributes: { [ATTR.LINK_TYPE]: LINK_TYPE_ORIGINAL_EXECUTION },
      });
    }
    if (!success) {
      span.setStatus(
        error?.message === undefined
          ? { code: SpanStatusCode.ERROR }
          : { code: SpanStatusCode.ERROR, message: error.message },
      );
      if (decision.outcome === 'failed' && error) span.recordException(exceptionOf(error));
    }
  } finally {
    span.end();
  }
}

/** The call's one log record, with the attributes the span has (never its content). */
export function emitCallLog(
  config: ObserverConfig,
  tool: string,
  attributes: Attributes,
  ctx: Context | undefined,
  decision: Decision,
  error: ErrorInfo | undefined,
): void {
  const logger = config.signals.logger();
  if (!logger) return;
  const outcome = decision.outcome;
  const level = SEVERITY[KNOWN_OUTCOMES.has(outcome) ? OUTCOME_SEVERITY[outcome] : 'WARN'];
  const body = config.logBody(tool, outcome, error?.message);
  const record: LogRecord = {
    eventName: LOG_EVENT_NAME,
    severityNumber: level.number,
    severityText: level.text,
  };
  if (body !== undefined) record.body = body;
  // Emitted once, at the end of the scope: nothing mutates these attributes afterwards.
  record.attributes = attributes;
  if (ctx !== undefined) record.context = ctx;
  if (outcome === 'failed' && error) record.exception = exceptionOf(error);
  logger.emit(record);
}

/** The call's metrics: its count, the handler's duration when it ran, and the wait. */
export function recordCallMetrics(
  config: ObserverConfig,
  labels: MetricLabels,
  decision: Decision,
  error: ErrorInfo | undefined,
): void {
  const instruments = config.signals.instruments();
  const { key, attributes, withErrorType } = labels.outcome(decision.outcome, errorType(decision, error));
  instruments.sums.calls.series(key, attributes).value += 1;
  const ranHandler = KNOWN_OUTCOMES.has(decision.outcome) && OUTCOME_INFO[decision.outcome].ranHandler;
  if (ranHandler && Number.isFinite(decision.executionSeconds) && (decision.executionSeconds ?? -1) >= 0) {
    instruments.executeDuration.record(decision.executionSeconds as number, withErrorType);
  }
  const waitedMs = decision.waitedMs;
  if (typeof waitedMs === 'number' && Number.isFinite(waitedMs) && waitedMs > 0) {
    instruments.waitDuration.record(waitedMs / 1000, attributes);
  }
}
