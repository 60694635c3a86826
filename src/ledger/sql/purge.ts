import { expired } from './columns.js';
import { runsTable } from './names.js';

/**
 * The whole-table purge batch, for PostgreSQL 13 and partitioned tables (see purge-sweep.ts). Deletes one batch
 * of expired rows, skipping rows another purger holds, and answers a row for each. By key, the primary key: `id` has no
 * index since migration 8. No order and no index (migration 13 dropped the expiry BRIN): a scan that stops at the
 * batch's size, as a batch that must be the oldest would sort every expired row each time. $1 batch size.
 */
export function purgeExpiredBatchSql(schema: string): string {
  const t = runsTable(schema);
  return `DELETE FROM ${t} WHERE (tenant_id, tool_name, idempotency_key) IN (
  SELECT tenant_id, tool_name, idempotency_key FROM ${t} r WHERE ${expired('r')} LIMIT $1::integer
  FOR UPDATE SKIP LOCKED
)
RETURNING 1`;
}

/**
 * What a purge reads when it starts: the server's version (TID range scans need 14), the heap's size in blocks (the
 * end of its sweep), and whether the table is partitioned (a parent has no heap of its own). $1 the table,
 * `schema.tool_runs` quoted.
 */
export function purgeStartSql(): string {
  return `SELECT current_setting('server_version_num')::integer AS server_version,
  (pg_relation_size(c.oid) / current_setting('block_size')::bigint)::bigint::text AS heap_blocks,
  c.relkind = 'p' AS partitioned
FROM pg_class c WHERE c.oid = $1::text::regclass`;
}

/**
 * Sent before each window batch, in its transaction: the window must be read by a TID range scan. A bitmap scan of
 * a BRIN on a schema before migration 13 would read every expired range of the whole table for each window, a
 * sequential scan all of it.
 */
export function purgeWindowPlanSql(): string {
  return `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true)`;
}

/**
 * Deletes one batch of expired rows within one window of heap blocks (see purge-sweep.ts), skipping rows another
 * purger holds. Answers how many rows it took and deleted, and the last one's position (a TID range scan returns
 * rows in heap order). $1 batch size, $2 the window's first tid, $3 the tid after it.
 *
 * By `ctid`, not by key: the batch holds each row's lock, so no one else can update or delete it and its `ctid`
 * stays its own until this statement ends (and a version that did change would fail the `ctid` test on recheck, and
 * be left). That spares a primary-key descent per row: 3 M rows with 1 M expired took 5.6 s against 17.1 s by key,
 * with the same WAL.
 */
export function purgeWindowSql(schema: string): string {
  const t = runsTable(schema);
  return `WITH batch AS MATERIALIZED (
  SELECT r.ctid AS at FROM ${t} r
  WHERE r.ctid >= $2::tid AND r.ctid < $3::tid AND ${expired('r')}
  LIMIT $1::integer FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM ${t} WHERE ctid = ANY (ARRAY(SELECT at FROM batch)) RETURNING 1
)
SELECT (SELECT count(*) FROM batch)::integer AS taken, (SELECT count(*) FROM gone)::integer AS deleted,
  (SELECT max(at) FROM batch)::text AS last`;
}

/** Counts expired rows (for dry runs and progress). */
export function countExpiredSql(schema: string): string {
  return `SELECT count(*)::bigint::text AS count FROM ${runsTable(schema)} r WHERE ${expired('r')}`;
}
