import { describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { ATTR, METRIC } from '../../src/telemetry/vocabulary.js';
import { pgliteBackend } from '../support/db.js';
import { useGlobalHarness } from '../support/telemetry-harness.js';

// Issue 14's edges, on PGlite (the rules under test live in TypeScript or in the one claim statement).
describe('sharp edges', () => {
  const backend = pgliteBackend();
  const harness = useGlobalHarness();

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
    const outcomes = (await harness().points(METRIC.TOOL_CALLS)).map((p) => p.attributes[ATTR.OUTCOME]);
    expect(outcomes).toEqual(['rejected']);
    const reasons = harness()
      .finishedSpans()
      .map((s) => s.attributes[ATTR.REJECTED_REASON]);
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

  it('refuses a row edited by hand into a status it never writes, saying what to do, for calls and getJob', async () => {
    // Prepare: migration 6 dropped the CHECK constraints, so only the code stands between such a row and a guess.
    const ledger = await backend.open({ replayCacheEntries: 0 });
    const tool = ledger.tool({ name: 'edge_status', kind: 'mutation', handler: () => 'ran' });
    const job = ledger.tool({ name: 'edge_status_job', kind: 'job', handler: () => 'done' });
    await tool.call({}, { key: 'k-status' });
    const started = await job.call({}, { key: 'k-status-job' });
    await expect.poll(async () => (await job.getJob(started.jobId))?.status).toBe('succeeded');
    await backend.sql(`UPDATE "${ledger.schema}".tool_runs SET status = 'paused'`);

    // Act
    const call = tool.call({}, { key: 'k-status' });
    const lookup = job.getJob(started.jobId);

    // Assess
    for (const refused of [call, lookup]) {
      await expect(refused).rejects.toMatchObject({
        code: 'LEDGER_UNAVAILABLE',
        retryable: false,
        message: expect.stringMatching(/status "paused", which tool-ledger never writes.*tool-ledger forget/),
      });
    }
  });

  const deep = (levels: number) => {
    let value: unknown = 'bottom';
    for (let i = 0; i < levels; i++) value = { next: value };
    return value;
  };

  it('refuses 5,000-deep input and lone surrogates as INPUT_INVALID, saving nothing', async () => {
    const ledger = await backend.open();
    const tool = ledger.tool({ name: 'edge_input', kind: 'mutation', handler: () => 'ran' });
    await expect(tool.call(deep(5000), { key: 'deep' })).rejects.toMatchObject({ code: 'INPUT_INVALID' });
    await expect(tool.call({ text: 'a\uD800b' }, { key: 'surrogate' })).rejects.toMatchObject({
      code: 'INPUT_INVALID',
    });
    await expect(tool.call({ ['\uDC00']: 1 }, { key: 'surrogate-key' })).rejects.toMatchObject({
      code: 'INPUT_INVALID',
    });
    expect(await backend.sql(`SELECT 1 FROM "${ledger.schema}".tool_runs`)).toEqual([]);
  });

  it('answers a 5,000-deep result with RESULT_INVALID, and replays RESULT_INVALID', async () => {
    const ledger = await backend.open();
    const tool = ledger.tool({ name: 'edge_result', kind: 'mutation', handler: () => deep(5000) });
    await expect(tool.call({}, { key: 'deep' })).rejects.toMatchObject({ code: 'RESULT_INVALID' });
    const replay = tool.invoke({}, { key: 'deep' });
    await expect(replay).rejects.toMatchObject({ code: 'RESULT_INVALID', name: 'ToolLedgerError' });
  });

  it('refuses purgeExpired() after close() with LEDGER_CLOSED', async () => {
    const ledger = await backend.open();
    await ledger.close();
    await expect(ledger.purgeExpired()).rejects.toMatchObject({ code: 'LEDGER_CLOSED' });
  });

  it('refuses a tool name registered twice, unknown options, a blank key and too many seconds', async () => {
    const ledger = await backend.open();
    ledger.tool({ name: 'edge_twice', kind: 'mutation', handler: () => 1 });
    expect(() => ledger.tool({ name: 'edge_twice', kind: 'read', handler: () => 2 })).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining('already registered'),
      }),
    );
    expect(() =>
      ledger.tool({ name: 'edge_typo', kind: 'mutation', handler: () => 1, leaseSecond: 5 } as never),
    ).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining('leaseSeconds') }),
    );
    expect(() =>
      ledger.tool({ name: 'edge_lease', kind: 'mutation', handler: () => 1, leaseSeconds: 6.5e6 }),
    ).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    const tool = ledger.tool({ name: 'edge_blank', kind: 'mutation', handler: () => 1 });
    await expect(tool.call({}, { key: '   ' })).rejects.toMatchObject({ code: 'KEY_INVALID' });
  });

  it('says a start-up failed, not a call, for a wrong port, and CONFIG_INVALID for a string that is no URL', async () => {
    const failure = await createLedger({
      connectionString: 'postgres://postgres@127.0.0.1:1/test',
      connectTimeoutSeconds: 2,
      telemetry: false,
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({
      code: 'LEDGER_UNAVAILABLE',
      message: expect.stringContaining('createLedger'),
    });
    expect((failure as Error).message).not.toMatch(/idempotency key/);
    await expect(
      createLedger({ connectionString: 'definitely not a url', telemetry: false }),
    ).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
  });
});
