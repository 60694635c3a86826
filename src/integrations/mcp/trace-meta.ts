import { type Context, context, isSpanContextValid, propagation, trace } from '@opentelemetry/api';

/** The W3C trace context an MCP request carries in `params._meta` (SEP-414, MCP 2026-07-28). */
export interface McpTraceMeta {
  traceparent?: string;
  tracestate?: string;
}

/**
 * The `traceparent` and `tracestate` of a context (the active one by default), for a client's `params._meta`, so
 * the server continues the client's trace: its span, and the ledger's `execute_tool` span, become children of the
 * client's span. Empty when the context has no valid span. The application's propagator writes them when it is a
 * W3C one; otherwise they are formatted here, since the revision fixes the W3C format. Other fields a propagator
 * writes (baggage) are left out: the revision defines only these two, and baggage may hold personal data.
 */
export function mcpTraceMeta(ctx: Context = context.active()): McpTraceMeta {
  const spanContext = trace.getSpanContext(ctx);
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return {};
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  if (typeof carrier.traceparent === 'string') {
    return {
      traceparent: carrier.traceparent,
      ...(typeof carrier.tracestate === 'string' ? { tracestate: carrier.tracestate } : {}),
    };
  }
  const flags = (spanContext.traceFlags & 1).toString(16).padStart(2, '0');
  const tracestate = spanContext.traceState?.serialize();
  return {
    traceparent: `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`,
    ...(tracestate ? { tracestate } : {}),
  };
}

/**
 * A copy of MCP request params (such as those of `client.callTool(params)`) with the context's trace context
 * merged into `_meta`; the params' own `_meta` entries stay. The params are returned unchanged when there is no
 * span to continue.
 */
export function withMcpTraceMeta<P extends object>(
  params: P,
  ctx: Context = context.active(),
): P & { _meta?: Record<string, unknown> } {
  const meta = mcpTraceMeta(ctx);
  if (meta.traceparent === undefined) return params;
  const own = (params as { _meta?: unknown })._meta;
  return { ...params, _meta: { ...(typeof own === 'object' && own !== null ? own : {}), ...meta } };
}
