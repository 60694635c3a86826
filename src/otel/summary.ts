import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ATTR } from '../telemetry/vocabulary.js';

/** A finished span, reduced to what a reader of the demo output needs. */
export interface SpanSummary {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly durationMs: number;
  readonly status: 'unset' | 'ok' | 'error';
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly links: readonly { readonly traceId: string; readonly spanId: string; readonly type: unknown }[];
}

export function summarizeSpan(span: ReadableSpan): SpanSummary {
  const [seconds, nanos] = span.duration;
  return {
    name: span.name,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    durationMs: seconds * 1000 + nanos / 1e6,
    status:
      span.status.code === SpanStatusCode.ERROR
        ? 'error'
        : span.status.code === SpanStatusCode.OK
          ? 'ok'
          : 'unset',
    attributes: { ...span.attributes },
    links: span.links.map((link) => ({
      traceId: link.context.traceId,
      spanId: link.context.spanId,
      type: link.attributes?.[ATTR.LINK_TYPE],
    })),
  };
}

const short = (id: string) => id.slice(0, 8);

/** One line per span: name, outcome, duration, key (or its hash) and the link to the original execution. */
export function formatSummary(serviceName: string, spans: readonly SpanSummary[]): string {
  const lines = [
    `${serviceName}: ${spans.length} span${spans.length === 1 ? '' : 's'} (kept in memory; set OTEL_EXPORTER_OTLP_ENDPOINT to export them)`,
  ];
  const width = Math.max(0, ...spans.map((s) => s.name.length));
  for (const span of spans) {
    const a = span.attributes;
    const parts = [
      `  ${span.name.padEnd(width)}`,
      String(a[ATTR.OUTCOME] ?? span.status).padEnd(11),
      `${span.durationMs.toFixed(1).padStart(7)} ms`,
      `trace ${short(span.traceId)} span ${short(span.spanId)}`,
    ];
    if (a[ATTR.IDEMPOTENCY_KEY] !== undefined) parts.push(`key=${String(a[ATTR.IDEMPOTENCY_KEY])}`);
    else if (a[ATTR.IDEMPOTENCY_KEY_HASH] !== undefined) {
      parts.push(`key_hash=${String(a[ATTR.IDEMPOTENCY_KEY_HASH]).slice(0, 12)}…`);
    }
    if (a[ATTR.ERROR_TYPE] !== undefined) parts.push(`error=${String(a[ATTR.ERROR_TYPE])}`);
    for (const link of span.links) parts.push(`→ ${String(link.type ?? 'link')} span ${short(link.spanId)}`);
    lines.push(parts.join('  '));
  }
  return lines.join('\n');
}
