import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ToolLedgerError } from '../../src/index.js';
import { backends } from '../support/db.js';

describe.each(backends)('replay cache on %s', (_name, makeBackend) => {
  const backend = makeBackend();

  async function setup(options: Parameters<typeof backend.open>[0] = {}) {
    const ledger = await backend.open(options);
    let runs = 0;
    const tool = ledger.tool({
      name: 'create_invoice',
      kind: 'mutation',
      handler: (input: unknown) => ({ invoice: ++runs, input }),
    });
    const rows = (key: string) =>
      backend.sql<{ conflict_count: number }>(
        `SELECT conflict_count FROM "${ledger.schema}".tool_runs WHERE idempotency_key = $1`,
        [key],
      );
    return { ledger, tool, rows, runs: () => runs };
  }

  it('replays from memory what this process completed, and still refuses other parameters through the database', async () => {
    const { tool, rows, runs } = await setup();
    const first = await tool.invoke({ amount: 1 }, { key: 'k1' });
    const again = await tool.invoke({ amount: 1 }, { key: 'k1' });
    expect(again).toMatchObject({ outcome: 'replayed', value: first.value, attempt: 1 });
    expect(again.completedAt).toEqual(first.completedAt);
    expect(again.value).not.toBe(first.value);
    const refused = await tool.invoke({ amount: 2 }, { key: 'k1' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ToolLedgerError);
    expect((refused as ToolLedgerError).code).toBe('KEY_REUSED');
    expect(await rows('k1')).toEqual([{ conflict_count: 1 }]);
    const otherUser = await tool.invoke({ amount: 1 }, { key: 'k1', user: 'u2' }).catch((e: unknown) => e);
    expect((otherUser as ToolLedgerError).code).toBe('KEY_REUSED');
    expect(runs()).toBe(1);
  });

  it("respects the row's expiry: past its TTL the key executes again", async () => {
    const { tool, runs } = await setup({ ttlSeconds: 1 });
    await tool.call({ amount: 1 }, { key: 'short' });
    expect((await tool.invoke({ amount: 1 }, { key: 'short' })).outcome).toBe('replayed');
    await sleep(1100);
    expect((await tool.invoke({ amount: 1 }, { key: 'short' })).outcome).toBe('executed');
    expect(runs()).toBe(2);
  });

  it('keeps replaying a row deleted by hand until it expires; with the cache off the key runs again', async () => {
    const cached = await setup();
    await cached.tool.call({ amount: 1 }, { key: 'gone' });
    await backend.sql(`DELETE FROM "${cached.ledger.schema}".tool_runs WHERE idempotency_key = 'gone'`);
    expect((await cached.tool.invoke({ amount: 1 }, { key: 'gone' })).outcome).toBe('replayed');

    const uncached = await setup({ replayCacheEntries: 0 });
    await uncached.tool.call({ amount: 1 }, { key: 'gone' });
    await backend.sql(`DELETE FROM "${uncached.ledger.schema}".tool_runs WHERE idempotency_key = 'gone'`);
    expect((await uncached.tool.invoke({ amount: 1 }, { key: 'gone' })).outcome).toBe('executed');
  });

  it('replays a row another process completed after reading it once', async () => {
    const writer = await setup();
    await writer.tool.call({ amount: 1 }, { key: 'shared' });
    const reader = await setup({ schema: writer.ledger.schema });
    expect((await reader.tool.invoke({ amount: 1 }, { key: 'shared' })).outcome).toBe('replayed');
    await backend.sql(`DELETE FROM "${writer.ledger.schema}".tool_runs WHERE idempotency_key = 'shared'`);
    expect((await reader.tool.invoke({ amount: 1 }, { key: 'shared' })).outcome).toBe('replayed');
    expect(reader.runs()).toBe(0);
  });
});
