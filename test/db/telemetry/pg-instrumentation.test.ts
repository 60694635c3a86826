import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { resetGlobals, TelemetryHarness } from '../../support/telemetry-harness.js';

// The instrumentation must be enabled before `pg` is first loaded, so nothing above imports it and the ledger
// (through the test's database helpers) is imported afterwards.
const harness = new TelemetryHarness().registerGlobal();
const instrumentation = new PgInstrumentation({ requireParentSpan: true });
instrumentation.setTracerProvider(harness.tracerProvider);
instrumentation.enable();
const { postgresBackend } = await import('../../support/db.js');

// instrumentation-pg writes `db.system.name` (current conventions) or `db.system` (older), depending on
// OTEL_SEMCONV_STABILITY_OPT_IN.
const isPostgres = (span: ReadableSpan) =>
  (span.attributes['db.system.name'] ?? span.attributes['db.system']) === 'postgresql';

afterAll(async () => {
  instrumentation.disable();
  await harness.shutdown();
  resetGlobals();
});

describe('with @opentelemetry/instrumentation-pg active', () => {
  const backend = postgresBackend();

  it("shows the ledger's SQL as child spans of the tool call, once per statement", async () => {
    // Prepare
    // The replay cache off: the replay must reach the database to show its statement (from the cache it runs none).
    const ledger = await backend.open({ telemetry: {}, replayCacheEntries: 0 });
    const tool = ledger.tool({ name: 'send_invoice', kind: 'mutation', handler: () => ({ sent: true }) });
    harness.spans.reset();

    // Act
    await tool.invoke({ n: 1 }, { key: 'inv_2024_0042' });
    await tool.invoke({ n: 1 }, { key: 'inv_2024_0042' });
    await ledger.close();

    // Assess
    const spans = harness.finishedSpans();
    const calls = spans.filter((s) => s.name === 'execute_tool send_invoice');
    expect(calls).toHaveLength(2);
    const queriesUnder = (call: ReadableSpan) =>
      spans.filter((s) => s.parentSpanContext?.spanId === call.spanContext().spanId && isPostgres(s));
    const first = queriesUnder(calls[0]!);
    const replay = queriesUnder(calls[1]!);
    const queries = (list: ReadableSpan[]) => list.filter((s) => s.name.startsWith('pg.query'));
    // First execution: the insert that claims the fresh key and the completion. Replay: the same insert, refused
    // since the key is taken, then the full claim that returns the stored result (a process whose recent claims
    // mostly found rows sends the full claim alone). Exactly these, so neither tool-ledger nor the pool adds a
    // second span for the same statement.
    expect(queries(first)).toHaveLength(2);
    expect(queries(replay)).toHaveLength(2);
    expect(queries(replay)[0]?.name).toBe(queries(first)[0]?.name);
    expect(queries(replay)[1]?.name).not.toBe(queries(first)[1]?.name);
    for (const span of spans) {
      expect(span.name).toMatch(/^(execute_tool send_invoice|pg\.query:.*|pg-pool\.connect|pg\.connect)$/);
    }
  });
});
