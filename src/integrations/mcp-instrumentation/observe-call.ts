import type { DiagLogger } from '@opentelemetry/api';
import type { CallObserver, Decision } from '../../contract/observer.js';
import type { McpRequestInfo } from '../mcp/types.js';
import type { Failure, operationMetric } from './operation-metric.js';
import { ERROR_TYPE_TOOL_ERROR } from './semconv.js';

/** Where a call's telemetry goes: the observer, the operation metric, and the diagnostics for telemetry's own faults. */
export interface CallTelemetry {
  observer(): CallObserver;
  metric(): ReturnType<typeof operationMetric>;
  readonly diag: DiagLogger;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function'
  );
}

/** The text of an `isError` result, as the error message the observer scrubs and records. */
function toolError(result: { content?: unknown }): Error {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const text = blocks
    .map((block) => (block && typeof block === 'object' && typeof block.text === 'string' ? block.text : ''))
    .filter(Boolean)
    .join('\n');
  // Its name becomes error.type: `tool_error`, as the MCP semantic conventions name results with isError set.
  const error = new Error(text || 'tool returned isError');
  error.name = ERROR_TYPE_TOOL_ERROR;
  error.stack = undefined;
  return error;
}

function isErrorResult(result: unknown): result is { isError: true; content?: unknown } {
  return result !== null && typeof result === 'object' && (result as { isError?: unknown }).isError === true;
}

/** The metric without the span, for a call whose span could not start. */
function measuredOnly(run: () => unknown, measure: (failure: Failure | undefined) => void): unknown {
  const settle = (result: unknown) => {
    measure(isErrorResult(result) ? { error: toolError(result) } : undefined);
    return result;
  };
  let result: unknown;
  try {
    result = run();
  } catch (error) {
    measure({ error });
    throw error;
  }
  if (!isThenable(result)) return settle(result);
  return Promise.resolve(result).then(settle, (error: unknown) => {
    measure({ error });
    throw error;
  });
}

/**
 * One call of an instrumented tool: its span (or the attributes of one already open), the operation metric and
 * the decision, from the callback's return or throw, synchronous or not. A telemetry fault never reaches the call.
 */
export function observeCall(
  telemetry: CallTelemetry,
  name: string,
  readOnly: boolean,
  input: unknown,
  request: McpRequestInfo,
  run: () => unknown,
): unknown {
  const received = performance.now();
  const measure = (end: Failure | undefined) => {
    try {
      telemetry.metric().record((performance.now() - received) / 1000, name, request, end);
    } catch (error) {
      telemetry.diag.error('could not record mcp.server.operation.duration', error);
    }
  };
  let scope: ReturnType<CallObserver['startCall']> | undefined;
  try {
    scope = telemetry.observer().startCall({
      tool: name,
      kind: readOnly ? 'read' : 'mutation',
      tenant: 'default',
      key: undefined,
      user: undefined,
      toolCallId: undefined,
      input,
    });
    scope.handlerStarted();
  } catch (error) {
    telemetry.diag.error('could not start the tool call span; the call runs untraced', error);
    return measuredOnly(run, measure);
  }
  const started = performance.now();
  const end = (decision: Omit<Decision, 'executionSeconds'>) => {
    measure(decision.outcome === 'failed' ? { error: decision.error } : undefined);
    try {
      scope.end({ ...decision, executionSeconds: (performance.now() - started) / 1000 });
    } catch (error) {
      telemetry.diag.error('could not end the tool call span', error);
    }
  };
  const settle = (result: unknown) => {
    end(
      isErrorResult(result)
        ? { outcome: 'failed', error: toolError(result) }
        : { outcome: 'executed', result },
    );
    return result;
  };
  let result: unknown;
  try {
    result = scope.run(run);
  } catch (error) {
    end({ outcome: 'failed', error });
    throw error;
  }
  if (isThenable(result)) {
    return Promise.resolve(result).then(settle, (error: unknown) => {
      end({ outcome: 'failed', error });
      throw error;
    });
  }
  return settle(result);
}
