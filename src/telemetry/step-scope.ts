import { type Context, context, type Span, SpanStatusCode } from '@opentelemetry/api';
import type { StepOutcome, StepScope } from '../contract/observer.js';
import { captureContent } from './content.js';
import { describeError } from './error-info.js';
import type { ObserverConfig } from './observer-config.js';
import { reportOnce } from './safe.js';
import { ATTR } from './vocabulary.js';

/**
 * Runs `fn` in `ctx`. A context manager that throws before calling `fn` must not stop the call; an error from `fn`
 * is the call's.
 */
export function runIn<T>(ctx: Context, fn: () => T): T {
  let entered = false;
  try {
    return context.with(ctx, () => {
      entered = true;
      return fn();
    });
  } catch (error) {
    if (entered) throw error;
    return fn();
  }
}

/** One step's span. Ends once; a telemetry fault never reaches the step. */
export class OtelStepScope implements StepScope {
  readonly #config: ObserverConfig;
  readonly #span: Span;
  readonly #context: Context;
  #ended = false;

  constructor(config: ObserverConfig, span: Span, ctx: Context) {
    this.#config = config;
    this.#span = span;
    this.#context = ctx;
  }

  readonly run = <T>(fn: () => T): T => runIn(this.#context, fn);

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
