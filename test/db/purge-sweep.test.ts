import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/contract/types.js';
import { type PurgeSweep, TID_RANGE_SCAN_VERSION } from '../../src/ledger/purge-sweep.js';
import { purgeExpiredBatchSql, purgeWindowPlanSql, purgeWindowSql } from '../../src/ledger/sql/purge.js';
import { LedgerStore } from '../../src/ledger/store.js';
import { databaseUrl } from '../support/db.js';
import { rawDrivers } from '../support/raw-drivers.js';

const ROWS = 3000;

/**
 * ROWS completed runs, one in three expired (g % 3 = 0), and one expired row whose lease is live, which the purge
 * must keep. About 60 heap blocks, so a window of 4 blocks makes a sweep of many batches.
 */
async function fill(db: Queryable, schema: string): Promise<void> {
  await db.query(
    `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, final,
       result_json, completed_at, expires_at)
     SELECT 't' || (g % 7), 'sweep', 'key-' || g, repeat('h', 64), 'succeeded', true,
       json_build_object('n', g, 'pad', repeat('x', 40)), now(),
       CASE WHEN g % 3 = 0 THEN now() - interval '1 minute' ELSE now() + interval '1 hour' END
     FROM generate_series(1, ${ROWS}) g`,
  );
  await db.query(
    `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, lease_owner,
       lease_expires_at, expires_at)
     VALUES ('t0', 'sweep', 'leased', 'h', 'in_progress', 'owner', now() + interval '1 hour', now() - interval '1 minute')`,
  );
}

async function sweepAll(store: LedgerStore, windowBlocks: number, batchSize: number) {
  let sweep: PurgeSweep = await store.startPurge(windowBlocks);
  const kinds = new Set<string>([sweep.kind]);
  let deleted = 0;
  let batches = 0;
  // Bounded: a sweep of ~60 blocks in windows of 4 with ~1,000 rows in batches of 50 takes well under 200.
  while (sweep.kind !== 'done' && batches < 500) {
    const batch = await store.purgeBatch(batchSize, sweep);
    deleted += batch.deleted;
    batches++;
    sweep = batch.next;
    kinds.add(sweep.kind);
  }
  return { deleted, batches, kinds, done: sweep.kind === 'done' };
}

const count = async (db: Queryable, schema: string, where: string) =>
  Number(
    (await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM "${schema}".tool_runs r WHERE ${where}`))
      .rows[0]?.n,
  );

/** Heap blocks the statement's plan visited, from EXPLAIN (ANALYZE, BUFFERS), in a transaction rolled back. */
async function blocksRead(db: Queryable, text: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query<{ 'QUERY PLAN': unknown }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
    params,
  );
  const plan = JSON.stringify(rows[0]?.['QUERY PLAN']);
  const root = (JSON.parse(plan) as Array<{ Plan: Record<string, number> }>)[0]?.Plan ?? {};
  return (root['Shared Hit Blocks'] ?? 0) + (root['Shared Read Blocks'] ?? 0);
}

/** The server's version_num: the sweep takes TID range windows from PostgreSQL 14 (TID_RANGE_SCAN_VERSION) on. */
async function serverVersion(db: Queryable): Promise<number> {
  return Number(
    (await db.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`)).rows[0]?.v,
  );
}

describe.each(rawDrivers)('the purge sweep on %s', (name, open) => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const fn of cleanup) await fn();
  });

  it('takes every expired row in windows of blocks, and keeps live rows and live leases', async () => {
    const { driver, schema, done } = await open('sweep');
    cleanup.push(done);
    await fill(driver, schema);
    const blocks = Number(
      (
        await driver.query<{ b: string }>(
          `SELECT (pg_relation_size('"${schema}".tool_runs') / 8192)::text AS b`,
        )
      ).rows[0]?.b,
    );
    expect(blocks).toBeGreaterThan(20);
    const store = new LedgerStore(driver, schema);
    const windows = (await serverVersion(driver)) >= TID_RANGE_SCAN_VERSION;
    const swept = await sweepAll(store, 4, 50);
    expect(swept).toMatchObject({ deleted: ROWS / 3, done: true });
    // PostgreSQL 13 (`npm run test:postgres13`) has no TID range scans: the same rows go in whole-table batches.
    expect([...swept.kinds].sort()).toEqual(['done', windows ? 'window' : 'whole-table']);
    // At least one batch per window, and one per 50 rows.
    if (windows) expect(swept.batches).toBeGreaterThanOrEqual(Math.ceil(blocks / 4));
    expect(swept.batches).toBeGreaterThanOrEqual(ROWS / 3 / 50);
    expect(await count(driver, schema, 'true')).toBe(ROWS - ROWS / 3 + 1);
    expect(await count(driver, schema, `r.idempotency_key = 'leased'`)).toBe(1);
    expect(await count(driver, schema, `r.expires_at <= now() AND r.status <> 'in_progress'`)).toBe(0);
    // A second sweep finds nothing.
    expect((await sweepAll(store, 4, 50)).deleted).toBe(0);
  });

  it('reads one window per batch, where a whole-table batch that finds too few rows reads every block', async (ctx) => {
    const { driver, schema, done } = await open('sweep_bound');
    cleanup.push(done);
    if ((await serverVersion(driver)) < TID_RANGE_SCAN_VERSION)
      ctx.skip('PostgreSQL 13 has no TID range scans, so its purge never sends the window statement');
    await fill(driver, schema);
    await driver.query(
      `DELETE FROM "${schema}".tool_runs WHERE expires_at <= now() AND status <> 'in_progress'`,
    );
    if (name === 'postgres') await driver.query(`VACUUM "${schema}".tool_runs`);
    const { wholeTable, window } = await driver.transaction(async (tx) => {
      const wholeTable = await blocksRead(tx, purgeExpiredBatchSql(schema), [50]);
      await tx.query(purgeWindowPlanSql());
      const window = await blocksRead(tx, purgeWindowSql(schema), [50, '(8,0)', '(12,0)']);
      return { wholeTable, window };
    });
    // The window's 4 blocks, plus a few pages of the plan's other nodes.
    expect(window).toBeLessThanOrEqual(4 + 4);
    expect(wholeTable).toBeGreaterThan(20);
  });

  it('plans each window as a TID range scan', async (ctx) => {
    const { driver, schema, done } = await open('sweep_plan');
    cleanup.push(done);
    if ((await serverVersion(driver)) < TID_RANGE_SCAN_VERSION)
      ctx.skip('PostgreSQL 13 has no TID range scans, so its purge never sends the window statement');
    await fill(driver, schema);
    if (name === 'postgres') await driver.query(`ANALYZE "${schema}".tool_runs`);
    const plan = await driver.transaction(async (tx) => {
      await tx.query(purgeWindowPlanSql());
      const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${purgeWindowSql(schema)}`, [
        50,
        '(0,0)',
        '(16384,0)',
      ]);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('Tid Range Scan');
    expect(plan).not.toMatch(/Seq Scan|Bitmap Heap Scan/);
  });
});

describe('the purge sweep beside another purger', () => {
  it('skips the rows another session holds and takes them on the next purge', async () => {
    const [, open] = rawDrivers[0] ?? [];
    if (open === undefined) throw new Error('no postgres driver');
    const { driver, schema, done } = await open('sweep_locked');
    const other = new pg.Client({ connectionString: databaseUrl() });
    await other.connect();
    try {
      await fill(driver, schema);
      await other.query('BEGIN');
      await other.query(
        `SELECT 1 FROM "${schema}".tool_runs WHERE idempotency_key IN ('key-3', 'key-2994') FOR UPDATE`,
      );
      const store = new LedgerStore(driver, schema);
      expect((await sweepAll(store, 4, 50)).deleted).toBe(ROWS / 3 - 2);
      await other.query('ROLLBACK');
      expect((await sweepAll(store, 4, 50)).deleted).toBe(2);
    } finally {
      await other.end();
      await done();
    }
  });
});
