import { type Attributes, type Context, context, createContextKey, propagation } from '@opentelemetry/api';

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

/**
 * The parent context for a request that carries W3C trace context in its `_meta` (as MCP clients that trace do),
 * or the active context when it carries none.
 */
export function contextFromMeta(meta: Record<string, unknown> | undefined): Context {
  const active = context.active();
  if (!meta || typeof meta.traceparent !== 'string') return active;
  return propagation.extract(active, meta);
}
