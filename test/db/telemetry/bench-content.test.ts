import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pgliteBackend } from '../../support/db.js';
import { useGlobalHarness } from '../../support/telemetry-harness.js';

/**
 * The performance docs read the with-SDK targets against `handContentInstrumentation` (bench/sdk.mjs): the
 * hand-written code emitting tool-ledger's own telemetry content. That reading holds only while the replica emits
 * what tool-ledger emits, so this compares the two for a first execution, name by name. When tool-ledger's content
 * changes, update the replica with it (and rerun bench/telemetry-baseline.mjs).
 */

interface Observe {
  paramsHash(hash: string): void;
  operation(name: string, seconds: number): void;
  executed(seconds: number): void;
  replayed(): void;
}
type Instrument = (work: (observe: Observe) => Promise<unknown>, key: string) => Promise<unknown>;

// The bench module imports the built package (dist/), which `npm test` builds first.
const sdkModule = pathToFileURL(resolve(import.meta.dirname, '../../../bench/sdk.mjs')).href;
const { handContentInstrumentation } = (await import(sdkModule)) as {
  handContentInstrumentation: (secret: string) => Instrument;
};
const { BENCH_INPUT, benchResult } = (await import(
  pathToFileURL(resolve(import.meta.dirname, '../../../bench/baselines.mjs')).href
)) as { BENCH_INPUT: Record<string, unknown>; benchResult: (i: number) => unknown };

const backend = pgliteBackend();
const harness = useGlobalHarness();
// Keys shaped like the benches' (`tl_<schema>_<chunk>_<i>`): the key check hashes them.
const KEY = 'tl_bench_content_3_42';

/** What a first execution of the bench's call emits, by instrumentation scope. */
async function emitted(scope: string) {
  const h = harness();
  const spans = h.finishedSpans().filter((s) => s.instrumentationScope.name === scope);
  const logs = h.logRecords().filter((r) => r.instrumentationScope.name === scope);
  const { resourceMetrics } = await h.reader.collect();
  const metrics = resourceMetrics.scopeMetrics
    .filter((m) => m.scope.name === scope)
    .flatMap((m) => m.metrics)
    // Points with a value: tool-ledger's in-flight gauge is back at 0 after the call and its unsaved-results counter
    // never moved, so neither is part of what a first execution emits.
    .filter((m) => m.dataPoints.some((p) => p.value !== 0))
    .map((m) => ({
      name: m.descriptor.name,
      points: m.dataPoints.map((p) => Object.keys(p.attributes).sort()),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
  const keys = (attributes: object) => Object.keys(attributes).sort();
  return {
    spans: spans.map((s) => ({ name: s.name, kind: s.kind, attributes: keys(s.attributes) })),
    logs: logs.map((r) => ({
      eventName: r.eventName,
      severity: r.severityNumber,
      attributes: keys(r.attributes),
    })),
    metrics,
  };
}

describe("bench/sdk.mjs's hand-written replica of tool-ledger's telemetry content", () => {
  it('emits the span, log record and metric points tool-ledger emits for a first execution', async () => {
    const ledger = await backend.open({ telemetry: { keyHashSecret: 'bench-key-hash-secret' } });
    const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: () => benchResult(1) });
    await tool.call(BENCH_INPUT, { key: KEY, tenant: 'bench' });

    const instrument = handContentInstrumentation('bench-key-hash-secret');
    await instrument(async (observe) => {
      observe.paramsHash('f'.repeat(64));
      observe.operation('claim', 0.001);
      observe.executed(0.0001);
      observe.operation('complete', 0.001);
      return benchResult(2);
    }, KEY);

    const ours = await emitted('tool-ledger');
    const replica = await emitted('hand-written-content');
    expect(ours.spans).toHaveLength(1);
    expect(ours.logs).toHaveLength(1);
    expect(replica.spans).toEqual(ours.spans);
    expect(replica.logs).toEqual(ours.logs);
    expect(ours.metrics.map((m) => m.name)).toEqual([
      'gen_ai.execute_tool.duration',
      'tool_ledger.ledger.operation.duration',
      'tool_ledger.tool.calls',
    ]);
    expect(replica.metrics).toEqual(ours.metrics);
  });
});
