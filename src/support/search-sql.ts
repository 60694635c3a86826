import { readSettingSql, resolvedTable, runsTable } from '../ledger/sql/names.js';

// The console's reads (search, overview, inbox, a run by id): every value a bound parameter, every filter that may
// be absent written so that Postgres, planning with the values (node-postgres sends unnamed statements), drops it.

/** The columns of a search hit: enough for a row of results, nothing from the result or error. */
const HIT_COLUMNS = `id::text AS id, tenant_id, tool_name, idempotency_key, user_id, status, final, attempt,
  conflict_count, created_at, created_at::text AS created_at_text, updated_at, completed_at, trace_id,
  (status = 'in_progress' AND lease_expires_at <= now()) AS lease_lapsed`;

/**
 * Runs matching a search without a key, newest first, a page at a time (keyset: the last row's created_at and id).
 * $1 null (the key; see `searchByKeySql`), $2 tenant or null, $3 tool or null, $4 status or null, $5 user or null,
 * $6 from (inclusive), $7 to (exclusive), $8 page after created_at or null, $9 page after id or null, $10 limit.
 * Answered by the created_at BRIN index (migration 10) within the time range, or the key index for a tenant.
 */
export function searchRunsSql(schema: string): string {
  return `SELECT ${HIT_COLUMNS}
FROM ${runsTable(schema)}
WHERE $1::text IS NULL
  AND ($2::text IS NULL OR tenant_id = $2::text)
  AND ($3::text IS NULL OR tool_name = $3::text)
  AND ($4::text IS NULL OR status = $4::text)
  AND ($5::text IS NULL OR user_id = $5::text)
  AND created_at >= $6::timestamptz AND created_at < $7::timestamptz
  AND ($8::timestamptz IS NULL OR (created_at, id) < ($8::timestamptz, $9::bigint))
ORDER BY created_at DESC, id DESC
LIMIT $10::integer`;
}

/**
 * The runs of one key in any tenant and tool, without an index on the key alone (which every first execution
 * would pay for): a loose scan of the key index (tenant_id, tool_name, idempotency_key) walks its distinct
 * (tenant, tool) pairs, one index probe each, and probes each pair for the key. Its cost grows with the number of
 * pairs, not of rows. $1 key, $2 tenant or null, $3 tool or null, $4 status or null, $5 user or null, $6 limit.
 */
export function searchByKeySql(schema: string): string {
  const t = runsTable(schema);
  return `WITH RECURSIVE pairs AS (
  (SELECT tenant_id, tool_name FROM ${t}
   WHERE ($2::text IS NULL OR tenant_id = $2::text)
   ORDER BY tenant_id, tool_name LIMIT 1)
  UNION ALL
  SELECT next.tenant_id, next.tool_name FROM pairs p CROSS JOIN LATERAL (
    SELECT tenant_id, tool_name FROM ${t}
    WHERE (tenant_id, tool_name) > (p.tenant_id, p.tool_name) AND ($2::text IS NULL OR tenant_id = $2::text)
    ORDER BY tenant_id, tool_name LIMIT 1) AS next
)
SELECT r.* FROM pairs p CROSS JOIN LATERAL (
  SELECT ${HIT_COLUMNS} FROM ${t}
  WHERE tenant_id = p.tenant_id AND tool_name = p.tool_name AND idempotency_key = $1::text
    AND ($4::text IS NULL OR status = $4::text) AND ($5::text IS NULL OR user_id = $5::text)) AS r
WHERE $3::text IS NULL OR p.tool_name = $3::text
ORDER BY r.created_at DESC, r.id DESC
LIMIT $6::integer`;
}

/**
 * The runs of one key as one plain statement, for a ledger distributed with Citus, which refuses `searchByKeySql`'s
 * recursive scan (it allows one only with a filter on the tenant). Citus sends it to every shard (or, with a
 * tenant, may route it to one), each reading its shard for the key. Parameters as `searchByKeySql`.
 */
export function searchByKeyDistributedSql(schema: string): string {
  return `SELECT ${HIT_COLUMNS} FROM ${runsTable(schema)}
WHERE idempotency_key = $1::text
  AND ($2::text IS NULL OR tenant_id = $2::text) AND ($3::text IS NULL OR tool_name = $3::text)
  AND ($4::text IS NULL OR status = $4::text) AND ($5::text IS NULL OR user_id = $5::text)
ORDER BY created_at DESC, id DESC
LIMIT $6::integer`;
}

/** The schema's distribution setting (`DISTRIBUTION_SETTING` of ledger/citus-sql.ts). $1 the setting's name. */
export const distributionSettingSql = (schema: string) => readSettingSql(schema);

/**
 * Counts by tool and status of the runs created in a window, with conflicts, stale and expired rows.
 * $1 from, $2 to, $3 tenant or null.
 */
export function overviewSql(schema: string): string {
  return `SELECT tool_name, status, count(*)::bigint::text AS count,
  coalesce(sum(conflict_count), 0)::bigint::text AS conflicts,
  count(*) FILTER (WHERE status = 'in_progress' AND lease_expires_at <= now())::bigint::text AS stale,
  count(*) FILTER (WHERE expires_at <= now()
    AND NOT (status = 'in_progress' AND lease_expires_at > now()))::bigint::text AS expired
FROM ${runsTable(schema)}
WHERE created_at >= $1::timestamptz AND created_at < $2::timestamptz
  AND ($3::text IS NULL OR tenant_id = $3::text)
GROUP BY tool_name, status
ORDER BY tool_name, status`;
}

/** Runs in status unknown, oldest first, for the inbox. $1 tenant or null, $2 limit. */
export function unknownInboxSql(schema: string): string {
  return `SELECT id::text AS id, tenant_id, tool_name, idempotency_key, user_id, status, attempt, updated_at,
  error_json, to_jsonb(tool_runs.*) -> 'steps' AS steps
FROM ${runsTable(schema)}
WHERE status = 'unknown' AND ($1::text IS NULL OR tenant_id = $1::text)
ORDER BY updated_at ASC, id ASC
LIMIT $2::integer`;
}

/** The resolve audit of one run, oldest first. $1 run id. */
export function resolvedByRunSql(schema: string): string {
  return `SELECT resolution, resolved_by, resolved_at, reason
FROM ${resolvedTable(schema)}
WHERE run_id = $1::bigint
ORDER BY resolved_at ASC, id ASC
LIMIT 100`;
}

/** Whether the audit chain of decisions exists (the approvals migration). $1 schema. */
export const auditChainExistsSql = `SELECT to_regclass(format('%I.tool_ledger_audit', $1::text)) IS NOT NULL AS exists`;
