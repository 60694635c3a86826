import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  type Span,
  SpanKind,
  trace,
} from '@opentelemetry/api';
import {
  type CallScope,
  type CallStart,
  type Decision,
  type LedgerOperation,
  NOOP_STEP_SCOPE,
  type SpanRef,
  type StepScope,
} from '../contract/observer.js';
import { OUTCOME_INFO } from '../contract/outcomes.js';
import { put } from './attributes.js';
import {
  collectDecisionAttributes,
  emitCallLog,
  endCallSpan,
  KNOWN_OUTCOMES,
  recordCallMetrics,
} from './call-decision.js';
import type { SumSeries } from './call-sums.js';
import { captureContent } from './content.js';
import { describeError, type ErrorInfo } from './error-info.js';
import { LEDGER_OPERATION_ATTRIBUTES, type MetricLabels } from './metric-labels.js';
import type { ObserverConfig } from './observer-config.js';
import { reportOnce } from './safe.js';
import { OtelStepScope, runIn } from './step-scope.js';
import {
  ATTR,
  LEDGER_OPERATIONS,
  OPERATION_NAME_EXECUTE_TOOL,
  SPAN_NAME_PREFIX,
  STEP_SPAN_NAME_PREFIX,
  TOOL_TYPE_FUNCTION,
} from './vocabulary.js';

const KNOWN_OPERATIONS = new Set<string>(LEDGER_OPERATIONS);
/**
 * Attributes an adapter knows and the ledger does not (MCP session and JSON-RPC request ids), left in the
 * context by `withCallAttributes` in src/integrations/shared: they belong on this span, not on a second one.
 * `createContextKey` is keyed by `Symbol.for`, so this finds the adapter's slot without importing it.
 */
const CALL_ATTRIBUTES_KEY = createContextKey('tool-ledger.call-attributes');

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
  /**
   * Whether a span or log record of this call could be kept when it started. When not (no SDK registered), there
   * is no span, and the attributes only spans and records carry (the key, the call id, the parameter hash) are not
   * worked out: checking a key and hashing it cost more than the rest of the call's telemetry together, for no
   * reader. Metrics are recorded either way.
   */
  readonly #observedAtStart: boolean;
  /** The parameter hash as the ledger gave it, kept for a log record whose logger arrives during the call. */
  #paramsHash: string | undefined;

  /** `spansOrLogsKept` is `config.signals.spansOrLogsKept()` as the observer read it for this call. */
  constructor(config: ObserverConfig, start: CallStart, spansOrLogsKept: boolean) {
    this.#config = config;
    this.#start = start;
    this.#observedAtStart = spansOrLogsKept;
    try {
      this.#collectStartAttributes();
    } catch (error) {
      reportOnce('span attributes', error);
    }
    // With nothing registered the API's span would stand in for the parent's and the handler's context would be
    // the parent's own: no span then, and the handler runs in the context it was called in.
    const started = spansOrLogsKept ? this.#startSpanInContext() : undefined;
    const span = started?.span;
    this.#span = span;
    this.#context = started?.context;
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

  #startSpanInContext(): { readonly span: Span; readonly context: Context } | undefined {
    try {
      const parent = context.active();
      const span = this.#startSpan(parent);
      return { span, context: trace.setSpan(parent, span) };
    } catch (error) {
      reportOnce('span start', error);
      return undefined;
    }
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
    const { tool, kind, tenant } = this.#start;
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
    put(a, ATTR.TENANT_ID, config.tenantLabel(tenant));
    put(a, ATTR.TOOL_KIND, kind);
    if (this.#observedAtStart) this.#collectCallerAttributes();
    this.#labels = config.metricLabels(tool, kind, tenant);
  }

  /**
   * The attributes only spans and log records carry: at the start of an observed call, or at the end of one that
   * started unobserved, for a logger registered since (with the parameter hash it kept meanwhile).
   */
  #collectCallerAttributes(): void {
    const config = this.#config;
    const a = this.#attributes;
    put(a, ATTR.GEN_AI_TOOL_CALL_ID, config.toolCallId(this.#start.toolCallId));
    Object.assign(a, config.keyAttributes(this.#start.key));
    const hash = this.#paramsHash;
    if (hash !== undefined) put(a, ATTR.PARAMS_HASH, config.paramsHash(hash));
  }

  readonly run = <T>(fn: () => T): T => {
    const ctx = this.#context;
    return ctx === undefined ? fn() : runIn(ctx, fn);
  };

  readonly setParamsHash = (hash: string): void => {
    try {
      if (typeof hash !== 'string') return;
      if (!this.#observedAtStart) {
        this.#paramsHash = hash;
        return;
      }
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
    const config = this.#config;
    // A logger registered during the call still gets the whole record.
    const observed = this.#observedAtStart || config.signals.spansOrLogsKept();
    try {
      if (!this.#observedAtStart && observed) this.#collectCallerAttributes();
    } catch (thrown) {
      reportOnce('span attributes', thrown);
    }
    try {
      collectDecisionAttributes(this.#decisionAttributes, this.#attributes, decision, error);
    } catch (thrown) {
      reportOnce('decision attributes', thrown);
    }
    try {
      if (this.#span) endCallSpan(this.#span, config, this.#decisionAttributes, decision, success, error);
    } catch (thrown) {
      reportOnce('span end', thrown);
    }
    try {
      if (observed) emitCallLog(config, this.#start.tool, this.#attributes, this.#context, decision, error);
    } catch (thrown) {
      reportOnce('decision log', thrown);
    }
    try {
      if (this.#labels) recordCallMetrics(config, this.#labels, decision, error);
    } catch (thrown) {
      reportOnce('decision metrics', thrown);
    }
  };
}
