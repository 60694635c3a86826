import { runsTable } from '../ledger/sql.js';

/**
 * Read-only statements of the support CLI. They live apart from the ledger's hot-path SQL because they serve
 * people, not calls: wider column lists, filters that may be absent, and no locking.
 */

/** Every column support may need, with the database clock so lease arithmetic never mixes clocks. */
const DETAIL_COLUMNS = `id::text AS id, tenant_id, tool_name, idempotency_key, user_id, parameter_hash, status, final,
  attempt, lease_owner, lease_expires_at, result_json, error_json, job_id, trace_id, span_id, conflict_count,
  last_conflict_at, created_at, started_at, updated_at, completed_at, expires_at,
  (status = 'in_progress' AND lease_expires_at <= now()) AS lease_lapsed, now() AS db_now`;

/** One run by its full key. $1 tenant, $2 tool, $3 key. */
export function inspectRunSql(schema: string): string {
  return `SELECT ${DETAIL_COLUMNS} FROM ${runsTable(schema)}
WHERE tenant_id = $1::text AND tool_name = $2::text AND idempotency_key = $3::text`;
}

/**
 * Runs by status, newest first. $1 status, $2 only lapsed leases, $3 tenant or null, $4 tool or null, $5 limit.
 * "Stale" means an in_progress row whose lease has lapsed: its owner stopped renewing, so nothing is working on
 * it until the next duplicate takes it over.
 */
export function listRunsSql(schema: string): string {
  return `SELECT id::text AS id, tenant_id, tool_name, idempotency_key, status, attempt, lease_owner, lease_expires_at,
  started_at, updated_at, completed_at, trace_id, conflict_count,
  (status = 'in_progress' AND lease_expires_at <= now()) AS lease_lapsed,
  CASE WHEN status = 'in_progress' AND lease_expires_at <= now()
    THEN extract(epoch FROM now() - lease_expires_at)::float8 END AS lapsed_seconds
FROM ${runsTable(schema)}
WHERE status = $1::text
  AND (NOT $2::boolean OR (status = 'in_progress' AND lease_expires_at <= now()))
  AND ($3::text IS NULL OR tenant_id = $3::text)
  AND ($4::text IS NULL OR tool_name = $4::text)
ORDER BY coalesce(lease_expires_at, updated_at) ASC, id ASC
LIMIT $5::integer`;
}

/** Counts by tool and status, with the stuck and expired rows support asks about first. $1 tenant or null. */
export function statsSql(schema: string): string {
  return `SELECT tool_name, status, count(*)::bigint::text AS count,
  count(*) FILTER (WHERE status = 'in_progress' AND lease_expires_at <= now())::bigint::text AS stale,
  count(*) FILTER (WHERE expires_at <= now()
    AND NOT (status = 'in_progress' AND lease_expires_at > now()))::bigint::text AS expired,
  coalesce(sum(conflict_count), 0)::bigint::text AS conflicts
FROM ${runsTable(schema)}
WHERE ($1::text IS NULL OR tenant_id = $1::text)
GROUP BY tool_name, status
ORDER BY tool_name, status`;
}

/** Whether the ledger table exists, so commands can say "run migrate" instead of a raw SQL error. $1 schema. */
export const tableExistsSql = `SELECT to_regclass(format('%I.tool_runs', $1::text)) IS NOT NULL AS exists`;
