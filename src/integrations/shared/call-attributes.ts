import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  createTraceState,
  isSpanContextValid,
  propagation,
  type SpanContext,
  trace,
} from '@opentelemetry/api';

/**
 * Context slot for span attributes an adapter knows and the ledger does not (the MCP session and JSON-RPC request
 * id). The telemetry observer copies them onto the `execute_tool` span it starts, so transport details land on
 * the one span of the call instead of a second wrapper span. `createContextKey` is keyed by `Symbol.for`, so the
 * observer can look the slot up without importing this module.
 */
export const CALL_ATTRIBUTES_KEY = createContextKey('tool-ledger.call-attributes');

/** Runs `fn` with `attributes` added to the calls it starts (merged over any set further out). */
export function withCallAttributes<T>(
  attributes: Attributes,
  fn: () => T,
  parent: Context = context.active(),
): T {
  const outer = parent.getValue(CALL_ATTRIBUTES_KEY) as Attributes | undefined;
  return context.with(parent.setValue(CALL_ATTRIBUTES_KEY, { ...outer, ...attributes }), fn);
}

/** The attributes set by `withCallAttributes` for the active context. */
export function callAttributes(ctx: Context = context.active()): Attributes | undefined {
  return ctx.getValue(CALL_ATTRIBUTES_KEY) as Attributes | undefined;
}

/** A W3C `traceparent` of version 00 (or a later one read as 00, as the recommendation says). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The span context a W3C `traceparent` (and `tracestate`) names, or undefined when it is not a valid one. */
export function parseTraceparent(traceparent: unknown, tracestate?: unknown): SpanContext | undefined {
  if (typeof traceparent !== 'string' || traceparent.length > 256) return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (!match || match[1] === 'ff' || (match[1] === '00' && match[5] !== undefined)) return undefined;
  const spanContext: SpanContext = {
    traceId: match[2]!,
    spanId: match[3]!,
    traceFlags: Number.parseInt(match[4]!, 16) & 1,
    isRemote: true,
    ...(typeof tracestate === 'string' && tracestate.length > 0 && tracestate.length <= 512
      ? { traceState: createTraceState(tracestate) }
      : {}),
  };
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}

/**
 * The parent context for a request that carries W3C trace context in its `_meta` (`traceparent` and
 * `tracestate`, as MCP's 2026-07-28 revision specifies after SEP-414), or the active context when it carries none.
 * The application's propagator reads it first; when that does not yield the trace (no SDK, or a propagator other
 * than W3C), the `traceparent` is read here, since the revision fixes the format whatever the application uses.
 */
export function contextFromMeta(meta: Record<string, unknown> | undefined): Context {
  const active = context.active();
  if (!meta || typeof meta.traceparent !== 'string') return active;
  const remote = parseTraceparent(meta.traceparent, meta.tracestate);
  if (remote === undefined) return active;
  const extracted = propagation.extract(active, meta);
  if (trace.getSpanContext(extracted)?.spanId === remote.spanId) return extracted;
  return trace.setSpanContext(active, remote);
}
