import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger } from '../../src/index.js';
import { ensureBuiltCli, runCli } from '../ops/support/cli-build.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { tenantsByWorker } from './support.js';

/**
 * The purge of a distributed ledger: the coordinator holds no heap of the table to sweep, so each batch runs on
 * every shard, on its worker, until no shard fills its batch. Expired rows go from every shard; rows alive, and
 * in-progress rows whose lease still holds, stay.
 */
const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const schema = uniqueSchema('citus_purge');
let ledger: Ledger;
let tenants: string[] = [];

beforeAll(async () => {
  ensureBuiltCli();
  ledger = await createLedger({
    connectionString: databaseUrl(),
    schema,
    distribute: true,
    telemetry: false,
  });
  const byWorker = await tenantsByWorker(admin, schema, 2);
  tenants = [...byWorker.values()].flat();
});

afterAll(async () => {
  await ledger?.close();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

/** `perTenant` runs of each tenant, then every run moved into the past but those of keys `live-*`. */
async function seed(prefix: string, perTenant: number): Promise<void> {
  const tool = ledger.tool({ name: `seed_${prefix}`, kind: 'mutation', handler: () => 'done' });
  for (const tenant of tenants) {
    await Promise.all(
      Array.from({ length: perTenant }, (_, i) => tool.call({}, { tenant, key: `${prefix}-${i}` })),
    );
    await tool.call({}, { tenant, key: `live-${prefix}` });
  }
  await admin.query(
    `UPDATE "${schema}".tool_runs SET expires_at = now() - interval '1 minute'
     WHERE tool_name = $1 AND idempotency_key NOT LIKE 'live-%'`,
    [`seed_${prefix}`],
  );
}

const count = async (where = 'true') =>
  Number((await admin.query(`SELECT count(*) AS n FROM "${schema}".tool_runs WHERE ${where}`)).rows[0].n);

describe('purging a distributed ledger', () => {
  it('deletes the expired rows of every shard in batches, and keeps live rows and held leases', async () => {
    await seed('a', 7);
    // An in-progress run past its expiry whose lease still holds: its owner is at work, the purge leaves it.
    await admin.query(
      `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status,
         lease_owner, lease_expires_at, expires_at)
       VALUES ($1, 'held', 'held-1', 'h', 'in_progress', 'worker:1', now() + interval '1 hour', now() - interval '1 minute')`,
      [tenants[0]],
    );
    const expired = tenants.length * 7;
    const progress: number[] = [];
    // Three rows a shard per batch: several rounds before any shard runs dry.
    const deleted = await ledger.purgeExpired({ batchSize: 3, onProgress: (n) => progress.push(n) });
    expect(deleted).toBe(expired);
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toBe(expired);
    expect(await count(`idempotency_key LIKE 'a-%'`)).toBe(0);
    expect(await count(`idempotency_key LIKE 'live-%'`)).toBe(tenants.length);
    expect(await count(`idempotency_key = 'held-1'`)).toBe(1);
    expect(await ledger.purgeExpired()).toBe(0);
  });

  it('purges from the CLI the same way, and counts them first in a dry run', async () => {
    await seed('b', 4);
    const dry = runCli(['purge', '--expired', '--dry-run', '--json', '--schema', schema], databaseUrl());
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ expired: tenants.length * 4, deleted: 0 });
    const r = runCli(
      ['purge', '--expired', '--batch-size', '2', '--json', '--schema', schema],
      databaseUrl(),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ deleted: tenants.length * 4 });
    expect(await count(`idempotency_key LIKE 'b-%'`)).toBe(0);
    expect(await count(`idempotency_key LIKE 'live-%'`)).toBe(tenants.length * 2);
  });
});
