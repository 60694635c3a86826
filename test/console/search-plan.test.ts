import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { searchByKeySql, searchRunsSql } from '../../src/support/search-sql.js';
import { runByIdSql } from '../../src/support/sql.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { seedRuns } from './support.js';

// The console's reads are answered by indexes, not by reading the table: each statement, with the values a search
// sends, planned by Postgres on 100,000 runs over a week. (Timings are bench/console.mjs's, never a test's.)

const schema = uniqueSchema('console_plans');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1 });

async function plan(sql: string, params: unknown[]): Promise<string> {
  const { rows } = await pool.query(`EXPLAIN ${sql}`, params);
  return rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
}

const hour = 3600 * 1000;

beforeAll(async () => {
  const ledger = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
  await ledger.close();
  await seedRuns(pool, schema, 100_000, { spreadHours: 7 * 24 });
});

afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

describe('the console search plans', () => {
  it('finds a key in any tenant and tool through the primary key, by a loose scan of its (tenant, tool) pairs', async () => {
    const text = await plan(searchByKeySql(schema), ['synthetic-4711', null, null, null, null, 50]);
    expect(text).toMatch(/Index (Only )?Scan using tool_runs_pkey/);
    expect(text).not.toMatch(/Seq Scan/);
    const { rows } = await pool.query(searchByKeySql(schema), ['synthetic-4711', null, null, null, null, 50]);
    expect(rows.map((r) => r.idempotency_key)).toEqual(['synthetic-4711']);
  });

  it('searches a time window (by status, by user) through the created_at BRIN index', async () => {
    const to = new Date(Date.now() + 60_000);
    const from = new Date(to.getTime() - hour);
    for (const [status, user] of [
      ['failed', null],
      [null, 'u_7'],
      [null, null],
    ]) {
      const text = await plan(searchRunsSql(schema), [
        null,
        null,
        null,
        status,
        user,
        from,
        to,
        null,
        null,
        51,
      ]);
      expect(text, `${status} ${user}`).toMatch(/Bitmap Index Scan on tool_runs_created_brin/);
      expect(text).not.toMatch(/Seq Scan/);
    }
  });

  it("searches a tenant's runs through the primary key or the BRIN index, never the whole table", async () => {
    const to = new Date(Date.now() + 60_000);
    const text = await plan(searchRunsSql(schema), [
      null,
      'tenant-7',
      null,
      null,
      null,
      new Date(to.getTime() - 24 * hour),
      to,
      null,
      null,
      51,
    ]);
    expect(text).toMatch(/tool_runs_pkey|tool_runs_created_brin/);
    expect(text).not.toMatch(/Seq Scan/);
  });

  it('reads a run by its id through the BRIN index (id has no B-tree since migration 8)', async () => {
    const text = await plan(runByIdSql(schema), ['54321']);
    expect(text).toMatch(/Bitmap Index Scan on tool_runs_created_brin/);
    expect(text).not.toMatch(/Seq Scan/);
  });
});
