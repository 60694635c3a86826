import {
  type Attributes,
  type AttributeValue,
  type Context,
  type Exception,
  type Link,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanOptions,
  type SpanStatus,
  type TimeInput,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import {
  MCP_INSTRUMENTATION_ATTR as ATTR,
  MCP_METHOD_TOOLS_CALL,
  SERVER_SPAN_NAME_PREFIX,
} from './semconv.js';

/** Spans this module started or adopted: never adopted (again) by a later call in their context. */
const claimed = new WeakSet<object>();

/** What the OpenTelemetry JS SDK's spans expose beyond the API; other implementations may not. */
interface ReadableView {
  readonly name?: unknown;
  readonly attributes?: Attributes;
}

/**
 * The rule for "another instrumentation already traces this tool call": the active span is recording, was not
 * started or adopted by this instrumentation, is named `tools/call …` or carries `mcp.method.name` =
 * `tools/call`, and, when it carries a `jsonrpc.request.id`, the id is this request's. A span that exposes
 * neither its name nor its attributes (an API-only implementation) is never adopted.
 */
export function adoptableSpan(parent: Context, requestId: unknown): Span | undefined {
  const span = trace.getSpan(parent);
  if (span === undefined || claimed.has(span) || !span.isRecording()) return undefined;
  const view = span as unknown as ReadableView;
  const attributes = view.attributes ?? {};
  const named = typeof view.name === 'string' && view.name.startsWith(`${SERVER_SPAN_NAME_PREFIX} `);
  if (!named && attributes[ATTR.METHOD_NAME] !== MCP_METHOD_TOOLS_CALL) return undefined;
  const otherId = attributes[ATTR.JSONRPC_REQUEST_ID];
  if (otherId !== undefined && requestId !== undefined && String(otherId) !== String(requestId))
    return undefined;
  return span;
}

/** Another instrumentation's span, lent to one call: it takes attributes and status, and its owner ends it. */
class AdoptedSpan implements Span {
  readonly #span: Span;
  constructor(span: Span) {
    this.#span = span;
  }
  spanContext(): SpanContext {
    return this.#span.spanContext();
  }
  setAttribute(key: string, value: AttributeValue): this {
    this.#span.setAttribute(key, value);
    return this;
  }
  setAttributes(attributes: Attributes): this {
    this.#span.setAttributes(attributes);
    return this;
  }
  addEvent(name: string, attributesOrStartTime?: Attributes | TimeInput, startTime?: TimeInput): this {
    this.#span.addEvent(name, attributesOrStartTime, startTime);
    return this;
  }
  addLink(link: Link): this {
    this.#span.addLink(link);
    return this;
  }
  addLinks(links: Link[]): this {
    this.#span.addLinks(links);
    return this;
  }
  setStatus(status: SpanStatus): this {
    this.#span.setStatus(status);
    return this;
  }
  /** The owner named its span; the name stays theirs. */
  updateName(): this {
    return this;
  }
  /** The owner ends its span. */
  end(): void {}
  isRecording(): boolean {
    return this.#span.isRecording();
  }
  recordException(exception: Exception, time?: TimeInput): void {
    this.#span.recordException(exception, time);
  }
}

/**
 * Shapes the spans the tool-ledger observer starts for instrumented MCP tools into MCP server spans: named
 * `tools/call {tool}`, kind SERVER. When the active span already traces this request (see `adoptableSpan`), the
 * attributes go onto that span and no second span is started. The delegate is looked up per span, so an SDK
 * registered after the instrumentation is still picked up.
 */
export function serverSpanTracerProvider(delegate: () => TracerProvider): TracerProvider {
  const tracers = new WeakMap<TracerProvider, Map<string, Tracer>>();
  const tracerOf = (name: string, version?: string, options?: Parameters<TracerProvider['getTracer']>[2]) => {
    const provider = delegate();
    let byName = tracers.get(provider);
    if (byName === undefined) {
      byName = new Map();
      tracers.set(provider, byName);
    }
    const id = `${name}@${version ?? ''}`;
    let tracer = byName.get(id);
    if (tracer === undefined) {
      tracer = provider.getTracer(name, version, options);
      byName.set(id, tracer);
    }
    return tracer;
  };
  return {
    getTracer: (name, version, options) => {
      const startSpan = (spanName: string, spanOptions: SpanOptions = {}, parent?: Context): Span => {
        const attributes = spanOptions.attributes ?? {};
        const existing = parent && adoptableSpan(parent, attributes[ATTR.JSONRPC_REQUEST_ID]);
        if (existing) {
          claimed.add(existing);
          existing.setAttributes(attributes);
          return new AdoptedSpan(existing);
        }
        const tool = attributes[ATTR.GEN_AI_TOOL_NAME];
        const span = tracerOf(name, version, options).startSpan(
          typeof tool === 'string' ? `${SERVER_SPAN_NAME_PREFIX} ${tool}` : spanName,
          { ...spanOptions, kind: SpanKind.SERVER },
          parent,
        );
        claimed.add(span);
        return span;
      };
      return {
        startSpan,
        startActiveSpan: ((spanName: string, ...rest: unknown[]) =>
          tracerOf(name, version, options).startActiveSpan(
            spanName,
            ...(rest as [SpanOptions, Context, (span: Span) => unknown]),
          )) as Tracer['startActiveSpan'],
      };
    },
  };
}
