import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ATTR, METRIC } from '../../src/telemetry/vocabulary.js';
import { pgliteBackend } from '../support/db.js';
import { resetGlobals, TelemetryHarness } from '../support/telemetry-harness.js';

// Issue 14's edges, on PGlite (the rules under test live in TypeScript or in the one claim statement).
describe('sharp edges', () => {
  const backend = pgliteBackend();
  let harness: TelemetryHarness;

  beforeEach(() => {
    harness = new TelemetryHarness().registerGlobal();
  });
  afterEach(async () => {
    await harness.shutdown();
    resetGlobals();
  });

  it('refuses a NUL in the tenant or user as CONTEXT_INVALID, counted as rejected (context_invalid)', async () => {
    // Prepare
    const ledger = await backend.open({ telemetry: {} });
    const tool = ledger.tool({ name: 'edge_context', kind: 'mutation', handler: () => 'ran' });

    // Act
    const byTenant = tool.invoke({}, { key: 'k1', tenant: 'a\u0000b' });
    const byUser = tool.invoke({}, { key: 'k2', user: 'u\u0000' });

    // Assess
    await expect(byTenant).rejects.toMatchObject({ code: 'CONTEXT_INVALID', retryable: false });
    await expect(byUser).rejects.toMatchObject({ code: 'CONTEXT_INVALID' });
    const outcomes = (await harness.points(METRIC.TOOL_CALLS)).map((p) => p.attributes[ATTR.OUTCOME]);
    expect(outcomes).toEqual(['rejected']);
    const reasons = harness.finishedSpans().map((s) => s.attributes[ATTR.REJECTED_REASON]);
    expect(reasons).toEqual(['context_invalid', 'context_invalid']);
    expect(await backend.sql(`SELECT 1 FROM "${ledger.schema}".tool_runs`)).toEqual([]);
  });

  it("reads a job's status only for the user it ran for", async () => {
    // Prepare
    const ledger = await backend.open();
    const job = ledger.tool({ name: 'edge_job', kind: 'job', handler: () => ({ file: 'x.csv' }) });
    const first = await job.call({}, { key: 'k-job', user: 'alice', tenant: 'acme' });

    // Act
    const forAlice = () => job.getJob(first.jobId, { tenant: 'acme', user: 'alice' });

    // Assess
    await expect.poll(async () => (await forAlice())?.status).toBe('succeeded');
    expect(await job.getJob(first.jobId, { tenant: 'acme', user: 'mallory' })).toBeUndefined();
    expect(await job.getJob(first.jobId, { tenant: 'acme' })).toBeUndefined();
  });
});
