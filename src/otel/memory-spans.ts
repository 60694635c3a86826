import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * Keeps finished spans for the demo summary. A processor rather than an exporter: exporters see spans only after
 * the resource's asynchronous attributes (such as host.id) resolve, so a summary printed right after a call would
 * miss them. Bounded, because the demo mode must not grow without limit if someone leaves it on.
 */
export class MemorySpans implements SpanProcessor {
  readonly #spans: ReadableSpan[] = [];
  readonly #limit: number;

  constructor(limit = 10_000) {
    this.#limit = limit;
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.#spans.length < this.#limit) this.#spans.push(span);
  }

  async forceFlush(): Promise<void> {}

  async shutdown(): Promise<void> {}

  spans(): readonly ReadableSpan[] {
    return this.#spans;
  }
}
