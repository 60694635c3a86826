import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolLedgerError } from '../../src/index.js';
import { pgliteBackend, postgresBackend } from '../support/db.js';

// Property runs against real databases: every bad key or input is refused before anything is saved, and every
// storable tenant/key round-trips verbatim.
describe.each([
  ['postgres', postgresBackend],
  ['pglite', pgliteBackend],
] as const)('hostile input on %s', (_name, makeBackend) => {
  const backend = makeBackend();

  it('refuses bad keys and non-JSON inputs without running the handler or saving a row', async () => {
    const ledger = await backend.open();
    let calls = 0;
    const tool = ledger.tool({ name: 'prop', kind: 'mutation', handler: () => ++calls });
    const badKey = fc.oneof(
      fc.constant(''),
      fc.stringMatching(/^[ \t\u00a0\u3000]{1,8}$/),
      fc.string({ minLength: 256, maxLength: 300 }),
      fc.tuple(fc.string(), fc.integer({ min: 0, max: 31 })).map(([s, c]) => s + String.fromCharCode(c)),
      fc.integer(),
    );
    await fc.assert(
      fc.asyncProperty(badKey, async (key) => {
        const error = await tool.call({ a: 1 }, { key: key as string }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ToolLedgerError);
        expect((error as ToolLedgerError).code).toMatch(/^KEY_(INVALID|REQUIRED)$/);
      }),
      { numRuns: 40 },
    );
    const notJson = fc.oneof(
      fc.bigInt().map((n) => ({ n })),
      fc.constant({ f: () => 1 }),
      fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY).map((x) => ({ x })),
    );
    await fc.assert(
      fc.asyncProperty(notJson, fc.uuid(), async (input, key) => {
        const error = await tool.call(input, { key }).catch((e: unknown) => e);
        expect((error as ToolLedgerError).code).toBe('INPUT_INVALID');
      }),
      { numRuns: 30 },
    );
    expect(calls).toBe(0);
    expect(await backend.sql(`SELECT 1 FROM "${ledger.schema}".tool_runs`)).toEqual([]);
  });

  it('stores any printable tenant and key verbatim and replays them', async () => {
    const ledger = await backend.open();
    const tool = ledger.tool({ name: 'echo', kind: 'mutation', handler: (input: unknown) => input });
    const text = fc
      .string({ unit: 'grapheme', minLength: 1, maxLength: 40 })
      .filter((s) => !/[\p{Cc}\u2028\u2029]/u.test(s));
    // A key of whitespace alone names no intent and is refused (the bad-key property above covers it).
    const key = text.filter((s) => s.trim().length > 0);
    // fast-check repeats small values across runs; a repeated (tenant, key) must carry its first payload, or the
    // ledger rightly answers KEY_REUSED.
    const firstPayload = new Map<string, unknown>();
    await fc.assert(
      fc.asyncProperty(text, key, fc.jsonValue({ maxDepth: 2 }), async (tenant, key, generated) => {
        const scope = JSON.stringify([tenant, key]);
        if (!firstPayload.has(scope)) firstPayload.set(scope, generated);
        const input = { payload: firstPayload.get(scope) };
        const first = await tool.invoke(input, { key, tenant });
        const again = await tool.invoke(input, { key, tenant });
        expect(again.outcome).toBe('replayed');
        expect(again.value).toEqual(first.value);
        const rows = await backend.sql<{ tenant_id: string; idempotency_key: string }>(
          `SELECT tenant_id, idempotency_key FROM "${ledger.schema}".tool_runs WHERE tenant_id = $1 AND idempotency_key = $2`,
          [tenant, key],
        );
        expect(rows).toEqual([{ tenant_id: tenant, idempotency_key: key }]);
      }),
      { numRuns: 40 },
    );
  });
});
