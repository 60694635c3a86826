import { quoteIdent } from '../ledger/sql/names.js';

// The console's reads as the explorer's read-only role (postgres/explorer.sql), which may read one view,
// <explorer schema>.ledger_runs, and call key_hash_of: no user ids, results, error messages, steps or audit. Every
// value a bound parameter. The view reads the ledger through a SECURITY DEFINER function, which Postgres never
// inlines, so each statement here reads the whole table once, as the explorer's dashboards do.

/**
 * Whether the connected role may read the ledger's own tables, and else the schema of an explorer view it may read
 * (found through its search_path, which explorer.sql sets). $1 the ledger's schema.
 */
export const readAccessSql = `SELECT
  coalesce((SELECT has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT')
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $1::text AND c.relname = 'tool_runs'), false) AS ledger,
  (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = to_regclass('ledger_runs') AND has_schema_privilege(n.oid, 'USAGE')
      AND has_table_privilege(c.oid, 'SELECT')) AS explorer`;

const view = (explorer: string) => `${quoteIdent(explorer)}.ledger_runs`;

/** The view's columns a search hit shows. */
const HIT_COLUMNS = `id::text AS id, tenant_id, tool_name, idempotency_key, key_hash, status, final, attempt,
  conflict_count, created_at, created_at::text AS created_at_text, updated_at, trace_id,
  (status = 'in_progress' AND lease_expires_at <= now()) AS lease_lapsed`;

/**
 * Runs matching a search, newest first, a page at a time. A key matches the view's key (shown when safe) or its
 * key_hash, which key_hash_of gives only for a key the ledger holds; with a key the time range is not used.
 * $1 key or null, $2 tenant or null, $3 tool or null, $4 status or null, $5 from, $6 to, $7 page after created_at
 * or null, $8 page after id or null, $9 limit.
 */
export function explorerSearchSql(explorer: string): string {
  return `WITH wanted AS (
  SELECT CASE WHEN $1::text IS NULL THEN NULL ELSE ${quoteIdent(explorer)}.key_hash_of($1::text) END AS wanted_hash)
SELECT ${HIT_COLUMNS}
FROM ${view(explorer)} r CROSS JOIN wanted w
WHERE ($1::text IS NULL OR r.idempotency_key = $1::text OR r.key_hash = w.wanted_hash)
  AND ($2::text IS NULL OR tenant_id = $2::text)
  AND ($3::text IS NULL OR tool_name = $3::text)
  AND ($4::text IS NULL OR status = $4::text)
  AND ($1::text IS NOT NULL OR (created_at >= $5::timestamptz AND created_at < $6::timestamptz))
  AND ($7::timestamptz IS NULL OR (created_at, id) < ($7::timestamptz, $8::bigint))
ORDER BY created_at DESC, id DESC
LIMIT $9::integer`;
}

/** One run by id, every column of the view. $1 run id. */
export function explorerRunSql(explorer: string): string {
  return `SELECT id::text AS id, tenant_id, tool_name, idempotency_key, key_hash, status, final, attempt,
  conflict_count, last_conflict_at, parameter_hash, job_id, lease_owner, lease_expires_at, created_at, started_at,
  updated_at, completed_at, expires_at, error_name, error_code, trace_id,
  (status = 'in_progress' AND lease_expires_at <= now()) AS lease_lapsed, now() AS db_now
FROM ${view(explorer)}
WHERE id = $1::bigint`;
}

/** Runs in status unknown, oldest first. $1 limit. */
export function explorerUnknownSql(explorer: string): string {
  return `SELECT id::text AS id, tenant_id, tool_name, idempotency_key, key_hash, attempt, updated_at, error_name,
  error_code
FROM ${view(explorer)}
WHERE status = 'unknown'
ORDER BY updated_at ASC, id ASC
LIMIT $1::integer`;
}

/** The overview's counts (as `overviewSql`) from the view. $1 from, $2 to, $3 tenant or null. */
export function explorerOverviewSql(explorer: string): string {
  return `SELECT tool_name, status, count(*)::bigint::text AS count,
  coalesce(sum(conflict_count), 0)::bigint::text AS conflicts,
  count(*) FILTER (WHERE status = 'in_progress' AND lease_expires_at <= now())::bigint::text AS stale,
  count(*) FILTER (WHERE expires_at <= now()
    AND NOT (status = 'in_progress' AND lease_expires_at > now()))::bigint::text AS expired
FROM ${view(explorer)}
WHERE created_at >= $1::timestamptz AND created_at < $2::timestamptz
  AND ($3::text IS NULL OR tenant_id = $3::text)
GROUP BY tool_name, status
ORDER BY tool_name, status`;
}
