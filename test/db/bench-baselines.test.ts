import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { databaseUrl, ownSchemas } from '../support/db.js';

/**
 * The sides the benches weigh tool-ledger against (bench/baselines.mjs) must keep working as the ledger's SQL
 * changes: the same-SQL side sends the ledger's own statements, and once sent a completion with parameters of an
 * older shape, which failed `npm run bench` at its first bench. Each side here makes a first execution and a
 * replay on a schema of its own; the same-SQL side's row must read as the ledger's own would.
 */

interface Side {
  first(chunk: number, index: number): Promise<unknown>;
  replay(chunk: number, index: number): Promise<unknown>;
  close(): Promise<void>;
}
type MakeSide = (url: string, schema: string, options: { concurrency: number }) => Promise<Side>;

// The bench module imports the built package (dist/), which `npm test` builds first.
const baselines = (await import(
  pathToFileURL(resolve(import.meta.dirname, '../../bench/baselines.mjs')).href
)) as {
  handWritten: MakeSide;
  sameSql: MakeSide;
  toolLedger: (url: string, schema: string) => Promise<Side>;
};

const { admin, fresh } = ownSchemas('bench_sides');

const SIDES = {
  'hand-written': baselines.handWritten,
  'same SQL': baselines.sameSql,
  'tool-ledger': (url: string, schema: string) => baselines.toolLedger(url, schema),
} as const satisfies Record<string, MakeSide>;

describe('the benches’ baselines', () => {
  it.each(Object.keys(SIDES) as (keyof typeof SIDES)[])(
    '%s makes a first execution and replays it',
    async (name) => {
      const schema = fresh();
      const side = await SIDES[name](databaseUrl(), schema, { concurrency: 2 });
      try {
        const first = await side.first(0, 7);
        expect(first).toEqual({ invoiceId: 'inv_0', status: 'open', amountCents: 4500 });
        expect(await side.replay(0, 7)).toEqual(first);
      } finally {
        await side.close();
      }
    },
  );

  it('the same-SQL side leaves the row the ledger would: succeeded, with its result and no lease', async () => {
    const schema = fresh();
    const side = await baselines.sameSql(databaseUrl(), schema, { concurrency: 1 });
    try {
      await side.first(1, 2);
    } finally {
      await side.close();
    }
    const { rows } = await admin.query(
      `SELECT status, final, attempt, lease_owner, result_json, completed_at IS NOT NULL AS completed
       FROM "${schema}".tool_runs WHERE idempotency_key = 'same_1_2'`,
    );
    expect(rows).toEqual([
      {
        status: 'succeeded',
        final: false,
        attempt: 1,
        lease_owner: null,
        result_json: { invoiceId: 'inv_0', status: 'open', amountCents: 4500 },
        completed: true,
      },
    ]);
  });
});
