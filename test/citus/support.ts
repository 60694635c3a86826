import type pg from 'pg';

/**
 * What the Citus suites read of a distributed schema: which shard and worker hold a tenant's rows. Only the Citus
 * lane runs test/citus (scripts/test-citus.mjs), with a coordinator as DATABASE_URL.
 */
export interface TenantPlacement {
  readonly tenant: string;
  readonly shardId: string;
  /** The shard's table on its worker, `tool_runs_<shard id>`. */
  readonly shardTable: string;
  readonly port: number;
}

type Sql = Pick<pg.Pool | pg.Client, 'query'>;

export async function placementOf(db: Sql, schema: string, tenant: string): Promise<TenantPlacement> {
  const { rows } = await db.query<{ shardid: string; nodeport: number }>(
    `SELECT s.shardid::text AS shardid, s.nodeport
     FROM citus_shards s
     WHERE s.table_name = $1::regclass
       AND s.shardid = get_shard_id_for_distribution_column($1::regclass, $2::text)`,
    [`"${schema}".tool_runs`, tenant],
  );
  const row = rows[0];
  if (!row) throw new Error(`no shard of "${schema}".tool_runs for tenant ${tenant}`);
  return { tenant, shardId: row.shardid, shardTable: `tool_runs_${row.shardid}`, port: row.nodeport };
}

/** `count` tenants on each worker port of the schema, from `tenant-0`, `tenant-1`, ... */
export async function tenantsByWorker(
  db: Sql,
  schema: string,
  count: number,
): Promise<Map<number, string[]>> {
  const byPort = new Map<number, string[]>();
  for (let i = 0; i < 200; i++) {
    const { tenant, port } = await placementOf(db, schema, `tenant-${i}`);
    const list = byPort.get(port) ?? [];
    if (list.length < count) list.push(tenant);
    byPort.set(port, list);
    if (byPort.size >= 2 && [...byPort.values()].every((l) => l.length >= count)) break;
  }
  return byPort;
}
