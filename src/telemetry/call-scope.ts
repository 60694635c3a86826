import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  INVALID_SPANID,
  INVALID_TRACEID,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import type { LogRecord } from '@opentelemetry/api-logs';
import {
  type CallScope,
  type CallStart,
  type Decision,
  type LedgerOperation,
  NOOP_STEP_SCOPE,
  type SpanRef,
  type StepOutcome,
  type StepScope,
} from '../contract/observer.js';
import { OUTCOME_INFO } from '../contract/outcomes.js';
import { put } from './attributes.js';
import type { SumSeries } from './call-sums.js';
import { captureContent } from './content.js';
import { describeError, type ErrorInfo } from './error-info.js';
import { LEDGER_OPERATION_ATTRIBUTES, type MetricLabels } from './metric-labels.js';
import type { ObserverConfig } from './observer-config.js';
import { reportOnce } from './safe.js';
import {
  ATTR,
  ERROR_TYPE_TOOL_ERROR,
  LEDGER_OPERATIONS,
  LINK_TYPE_ORIGINAL_EXECUTION,
  LOG_EVENT_NAME,
  OPERATION_NAME_EXECUTE_TOOL,
  OUTCOME_SEVERITY,
  OUTCOMES,
  SEVERITY,
  SPAN_NAME_PREFIX,
  STEP_SPAN_NAME_PREFIX,
  TOOL_TYPE_FUNCTION,
} from './vocabulary.js';

const KNOWN_OUTCOMES = new Set<string>(OUTCOMES);
const KNOWN_OPERATIONS = new Set<string>(LEDGER_OPERATIONS);
const HEX_TRACE_ID = /^[0-9a-f]{32}$/;
const HEX_SPAN_ID = /^[0-9a-f]{16}$/;
/**
 * Attributes an adapter knows and the ledger does not (MCP session and JSON-RPC request ids), left in the
 * context by `withCallAttributes` in src/integrations/shared: they belong on this span, not on a second one.
 * `createContextKey` is keyed by `Symbol.for`, so this finds the adapter's slot without importing it.
 */
const CALL_ATTRIBUTES_KEY = createContextKey('tool-ledger.call-attributes');

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

/**
 * One tool call's telemetry: its span from `startCall` to `end`, then one log record and the metrics of the
 * decision. Every step runs in its own try/catch (`reportOnce`, as `safeExecute` does), so no telemetry fault
 * reaches the call; written out rather than through `safeExecute`, which would allocate a closure per step and
 * call all of them through one call site the engine cannot inline.
 */
export class OtelCallScope implements CallScope {
  // The methods are arrow-function fields because the middleware passes them around detached
  // (`store.claim(request, scope.recordLedgerOperation)`).
  readonly spanRef: SpanRef | undefined;
  readonly #config: ObserverConfig;
  readonly #start: CallStart;
  readonly #span: Span | undefined;
  readonly #context: Context | undefined;
  /** Non-content attributes shared by the span and the log record. */
  readonly #attributes: Attributes = {};
  /** The part of `#attributes` learned at the decision, set on the span at its end. */
  readonly #decisionAttributes: Attributes = {};
  #labels: MetricLabels | undefined;
  #inFlight: SumSeries | undefined;
  #ended = false;

  constructor(config: ObserverConfig, start: CallStart) {
    this.#config = config;
    this.#start = start;
    try {
      this.#collectStartAttributes();
    } catch (error) {
      reportOnce('span attributes', error);
    }
    let span: Span | undefined;
    let ctx: Context | undefined;
    try {
      const parent = context.active();
      span = this.#startSpan(parent);
      ctx = trace.setSpan(parent, span);
    } catch (error) {
      span = undefined;
      ctx = undefined;
      reportOnce('span start', error);
    }
    this.#span = span;
    this.#context = ctx;
    let ref: SpanRef | undefined;
    try {
      // A non-recording span carries its parent's ids (or none): nothing a later replay could link to.
      if (span?.isRecording()) {
        const { traceId, spanId } = span.spanContext();
        ref = { traceId, spanId };
      }
    } catch (error) {
      ref = undefined;
      reportOnce('span context', error);
    }
    this.spanRef = ref;
  }

  #startSpan(parent: Context): Span {
    const config = this.#config;
    const start = this.#start;
    // Content goes on the span only, never on the log record, so it needs its own copy; otherwise the SDK's own
    // copy at span start is enough.
    let attributes = this.#attributes;
    const description = config.toolDescription(start.description);
    if (config.captureContent || description !== undefined) {
      attributes = { ...attributes };
      put(attributes, ATTR.GEN_AI_TOOL_DESCRIPTION, description);
    }
    if (config.captureContent) {
      put(
        attributes,
        ATTR.GEN_AI_TOOL_CALL_ARGUMENTS,
        captureContent(start.input, config.redactor, config.maxContentLength),
      );
    }
    const name = typeof start.tool === 'string' ? `${SPAN_NAME_PREFIX} ${start.tool}` : SPAN_NAME_PREFIX;
    return config.signals.tracer().startSpan(name, { kind: SpanKind.INTERNAL, attributes }, parent);
  }

  #collectStartAttributes(): void {
    const { tool, kind, tenant, toolCallId, key } = this.#start;
    const config = this.#config;
    const a = this.#attributes;
    const extra = context.active().getValue(CALL_ATTRIBUTES_KEY);
    if (extra !== null && typeof extra === 'object') {
      // Set first, so an adapter can never overwrite the ledger's own attributes.
      for (const [name, value] of Object.entries(extra)) put(a, name, value);
    }
    put(a, ATTR.GEN_AI_OPERATION_NAME, OPERATION_NAME_EXECUTE_TOOL);
    put(a, ATTR.GEN_AI_TOOL_NAME, tool);
    put(a, ATTR.GEN_AI_TOOL_TYPE, TOOL_TYPE_FUNCTION);
    put(a, ATTR.GEN_AI_TOOL_CALL_ID, config.toolCallId(toolCallId));
    put(a, ATTR.TENANT_ID, config.tenantLabel(tenant));
    put(a, ATTR.TOOL_KIND, kind);
    Object.assign(a, config.keyAttributes(key));
    this.#labels = config.metricLabels(tool, kind, tenant);
  }

  readonly run = <T>(fn: () => T): T => {
    const ctx = this.#context;
    if (ctx === undefined) return fn();
    let entered = false;
    try {
      return context.with(ctx, () => {
        entered = true;
        return fn();
      });
    } catch (error) {
      // A context manager that throws before calling `fn` must not stop the call; an error from `fn` is the call's.
      if (entered) throw error;
      return fn();
    }
  };

  readonly setParamsHash = (hash: string): void => {
    try {
      if (typeof hash !== 'string') return;
      const keyed = this.#config.paramsHash(hash);
      if (keyed === undefined) return;
      this.#attributes[ATTR.PARAMS_HASH] = keyed;
      this.#span?.setAttribute(ATTR.PARAMS_HASH, keyed);
    } catch (error) {
      reportOnce('span attributes', error);
    }
  };

  readonly recordLedgerOperation = (operation: LedgerOperation, seconds: number): void => {
    try {
      if (!KNOWN_OPERATIONS.has(operation) || !Number.isFinite(seconds) || seconds < 0) return;
      this.#config.signals
        .instruments()
        .ledgerOperationDuration.record(seconds, LEDGER_OPERATION_ATTRIBUTES[operation]);
    } catch (error) {
      reportOnce('ledger operation metric', error);
    }
  };

  readonly handlerStarted = (): void => {
    try {
      const labels = this.#labels;
      if (this.#inFlight || !labels) return;
      // Kept so the decrement goes to the same series even if the global meter provider changes meanwhile.
      const series = this.#config.signals.instruments().sums.inFlight.series(labels.key, labels.attributes);
      series.value += 1;
      this.#inFlight = series;
    } catch (error) {
      reportOnce('in-flight metric', error);
    }
  };

  readonly handlerFinished = (): void => {
    try {
      const series = this.#inFlight;
      this.#inFlight = undefined;
      if (series) series.value -= 1;
    } catch (error) {
      reportOnce('in-flight metric', error);
    }
  };

  readonly startStep = (name: string): StepScope => {
    try {
      const parent = this.#context;
      if (parent === undefined || typeof name !== 'string') return NOOP_STEP_SCOPE;
      const span = this.#config.signals.tracer().startSpan(
        `${STEP_SPAN_NAME_PREFIX} ${name}`,
        // The step name is the handler author's constant; the tool and tenant say whose step it is.
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            [ATTR.STEP_NAME]: name,
            [ATTR.GEN_AI_TOOL_NAME]: this.#attributes[ATTR.GEN_AI_TOOL_NAME],
          },
        },
        parent,
      );
      return new OtelStepScope(this.#config, span, trace.setSpan(parent, span));
    } catch (error) {
      reportOnce('step span', error);
      return NOOP_STEP_SCOPE;
    }
  };

  readonly end = (decision: Decision): void => {
    if (this.#ended) return;
    this.#ended = true;
    this.handlerFinished();
    const outcome = decision?.outcome;
    const success = KNOWN_OUTCOMES.has(outcome) && OUTCOME_INFO[outcome].success;
    let error: ErrorInfo | undefined;
    if (!success && decision !== undefined) {
      try {
        error = describeError(decision.error, this.#config.redactor, outcome === 'failed');
      } catch (thrown) {
        error = undefined;
        reportOnce('error description', thrown);
      }
    }
    try {
      this.#collectDecisionAttributes(decision, error);
    } catch (thrown) {
      reportOnce('decision attributes', thrown);
    }
    try {
      this.#endSpan(decision, success, error);
    } catch (thrown) {
      reportOnce('span end', thrown);
    }
    try {
      this.#emitLog(decision, error);
    } catch (thrown) {
      reportOnce('decision log', thrown);
    }
    try {
      this.#recordMetrics(decision, error);
    } catch (thrown) {
      reportOnce('decision metrics', thrown);
    }
  };

  #collectDecisionAttributes(decision: Decision, error: ErrorInfo | undefined): void {
    const a = this.#decisionAttributes;
    put(a, ATTR.OUTCOME, decision.outcome);
    if (Number.isInteger(decision.attempt)) put(a, ATTR.ATTEMPT, decision.attempt);
    if (decision.waitedMs !== undefined) put(a, ATTR.WAITED_MS, Math.round(decision.waitedMs));
    put(a, ATTR.CONFLICT_REASON, decision.conflictReason);
    put(a, ATTR.REJECTED_REASON, decision.rejectedReason);
    put(a, ATTR.JOB_ID, decision.jobId);
    if (error) put(a, ATTR.ERROR_CODE, error.code);
    put(a, ATTR.ERROR_TYPE, errorType(decision, error));
    Object.assign(this.#attributes, a);
  }

  #endSpan(decision: Decision, success: boolean, error: ErrorInfo | undefined): void {
    const span = this.#span;
    if (!span) return;
    try {
      // A span the sampler dropped keeps nothing: its attributes, links and status would only cost a result scrub.
      if (!span.isRecording()) return;
      span.setAttributes(this.#decisionAttributes);
      const config = this.#config;
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
        if (decision.outcome === 'failed' && error) {
          // A plain object, never the error itself: the SDK would copy its unscrubbed message and stack.
          span.recordException({
            name: error.type,
            ...(error.message === undefined ? {} : { message: error.message }),
            ...(error.stack === undefined ? {} : { stack: error.stack }),
          });
        }
      }
    } finally {
      span.end();
    }
  }

  #emitLog(decision: Decision, error: ErrorInfo | undefined): void {
    const logger = this.#config.signals.logger();
    if (!logger) return;
    const outcome = decision.outcome;
    const level = SEVERITY[KNOWN_OUTCOMES.has(outcome) ? OUTCOME_SEVERITY[outcome] : 'WARN'];
    const body = this.#config.logBody(this.#start.tool, outcome, error?.message);
    const record: LogRecord = {
      eventName: LOG_EVENT_NAME,
      severityNumber: level.number,
      severityText: level.text,
    };
    if (body !== undefined) record.body = body;
    // Emitted once, at the end of the scope: nothing mutates these attributes afterwards.
    record.attributes = this.#attributes;
    if (this.#context !== undefined) record.context = this.#context;
    if (outcome === 'failed' && error) {
      record.exception = {
        name: error.type,
        ...(error.message === undefined ? {} : { message: error.message }),
        ...(error.stack === undefined ? {} : { stack: error.stack }),
      };
    }
    logger.emit(record);
  }

  #recordMetrics(decision: Decision, error: ErrorInfo | undefined): void {
    const labels = this.#labels;
    if (!labels) return;
    const instruments = this.#config.signals.instruments();
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
}

/** One step's span. Ends once; a telemetry fault never reaches the step. */
class OtelStepScope implements StepScope {
  readonly #config: ObserverConfig;
  readonly #span: Span;
  readonly #context: Context;
  #ended = false;

  constructor(config: ObserverConfig, span: Span, ctx: Context) {
    this.#config = config;
    this.#span = span;
    this.#context = ctx;
  }

  readonly run = <T>(fn: () => T): T => {
    let entered = false;
    try {
      return context.with(this.#context, () => {
        entered = true;
        return fn();
      });
    } catch (error) {
      if (entered) throw error;
      return fn();
    }
  };

  readonly end = (outcome: StepOutcome, error?: unknown, result?: unknown): void => {
    if (this.#ended) return;
    this.#ended = true;
    const span = this.#span;
    try {
      if (!span.isRecording()) return;
      span.setAttribute(ATTR.STEP_OUTCOME, outcome);
      const config = this.#config;
      if (config.captureContent && result !== undefined) {
        // Scrubbed and bounded exactly as a call's result is.
        const text = captureContent(result, config.redactor, config.maxContentLength);
        if (text !== undefined) span.setAttribute(ATTR.GEN_AI_TOOL_CALL_RESULT, text);
      }
      if (outcome === 'failed' || outcome === 'unknown') {
        const info =
          error === undefined ? undefined : describeError(error, config.redactor, outcome === 'failed');
        if (info) span.setAttribute(ATTR.ERROR_TYPE, info.type);
        span.setStatus(
          info?.message === undefined
            ? { code: SpanStatusCode.ERROR }
            : { code: SpanStatusCode.ERROR, message: info.message },
        );
      }
    } catch (thrown) {
      reportOnce('step span end', thrown);
    } finally {
      try {
        span.end();
      } catch (thrown) {
        reportOnce('step span end', thrown);
      }
    }
  };
}
