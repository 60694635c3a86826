import { AUDIT_COLUMNS } from '../ledger/audit/chain.js';
import { auditTable } from '../ledger/audit/tables.js';
import {
  forgottenTable,
  KEY_HASH_SECRET_SETTING,
  resolvedTable,
  runsTable,
  settingsTable,
} from '../ledger/sql/names.js';

/**
 * The statements of support (the CLI and the console) that the ledger's hot path never sends. They live apart from the ledger's hot-path SQL because they serve
 * people, not calls: wider column lists, filters that may be absent, and no locking.
 */

/** Every column support may need, with the database clock so lease arithmetic never mixes clocks. */
const DETAIL_COLUMNS = `id::text AS id, tenant_id, tool_name, idempotency_key, user_id, parameter_hash, status, final,
  attempt, lease_owner, lease_expires_at, result_json, error_json, job_id, trace_id, span_id, conflict_count,
  last_conflict_at, created_at, started_at, updated_at, completed_at, expires_at,
  (status = 'in_progress' AND lease_expires_at <= now()) AS lease_lapsed, now() AS db_now,
  -- Read through the row's JSON so the CLI still reads a schema from before migration 7, which has no such column.
  to_jsonb(tool_runs.*) -> 'steps' AS steps`;

/**
 * Runs by status, newest first. $1 status, $2 only lapsed leases, $3 tenant or null, $4 tool or null, $5 limit.
 * "Stale" means an in_progress row whose lease has lapsed: its owner stopped renewing, so nothing is working on
 * it until the next duplicate takes it over.
 */
export function listRunsSql(schema: string): string {
  return `SELECT id::text AS id, tenant_id, tool_name, idempotency_key, status, attempt, lease_owner, lease_expires_at,
  started_at, updated_at, completed_at, trace_id, conflict_count,
  -- Why a run is unknown: the recorded error and the steps started but never recorded.
  CASE WHEN status = 'unknown' THEN error_json END AS error_json,
  CASE WHEN status = 'unknown' THEN to_jsonb(tool_runs.*) -> 'steps' END AS steps,
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

/**
 * Every run with this key, in any tenant and tool unless narrowed: support often has only the key a customer
 * quoted. $1 key, $2 tenant or null, $3 tool or null.
 */
export function runsByKeySql(schema: string): string {
  return `SELECT ${DETAIL_COLUMNS} FROM ${runsTable(schema)}
WHERE idempotency_key = $1::text AND ($2::text IS NULL OR tenant_id = $2::text) AND ($3::text IS NULL OR tool_name = $3::text)
ORDER BY tenant_id, tool_name, id`;
}

/** One run by its id (the console's run page). $1 id. */
export function runByIdSql(schema: string): string {
  return `SELECT ${DETAIL_COLUMNS} FROM ${runsTable(schema)} WHERE id = $1::bigint`;
}

/** Runs of one background job. $1 job id, $2 tenant or null, $3 tool or null. */
export function runsByJobSql(schema: string): string {
  return `SELECT ${DETAIL_COLUMNS} FROM ${runsTable(schema)}
WHERE job_id = $1::text AND ($2::text IS NULL OR tenant_id = $2::text) AND ($3::text IS NULL OR tool_name = $3::text)
ORDER BY tenant_id, tool_name, id`;
}

/**
 * Deletes a key's runs and records each deletion in the audit table, in one statement so neither happens alone.
 * $1 key, $2 tenant or null, $3 tool or null, $4 key attribute, $5 key value (telemetry form), $6 by, $7 reason.
 */
export function forgetKeySql(schema: string): string {
  return `WITH gone AS (
  DELETE FROM ${runsTable(schema)}
  WHERE idempotency_key = $1::text AND ($2::text IS NULL OR tenant_id = $2::text) AND ($3::text IS NULL OR tool_name = $3::text)
  RETURNING id, tenant_id, tool_name
)
INSERT INTO ${forgottenTable(schema)} (run_id, tenant_id, tool_name, key_attribute, key_value, forgotten_by, reason)
SELECT id, tenant_id, tool_name, $4::text, $5::text, $6::text, $7::text FROM gone
RETURNING run_id::text AS run_id, tenant_id, tool_name, forgotten_at`;
}

/** Whether the forget audit table exists (migration 3). $1 schema. */
export const forgottenTableExistsSql = `SELECT to_regclass(format('%I.tool_runs_forgotten', $1::text)) IS NOT NULL AS exists`;

/** Whether the settings table exists (migration 4). $1 schema. */
export const settingsTableExistsSql = `SELECT to_regclass(format('%I.tool_ledger_settings', $1::text)) IS NOT NULL AS exists`;

/** When the stored key-hash secret was last set, without reading it. */
export function keySecretUpdatedAtSql(schema: string): string {
  return `SELECT updated_at FROM ${settingsTable(schema)} WHERE name = '${KEY_HASH_SECRET_SETTING}'`;
}

/**
 * The forget audit records of one key, newest first, so `inspect` can say a run was forgotten rather than never
 * claimed. $1 key attribute, $2 key value (telemetry form), $3 tenant or null, $4 tool or null.
 */
export function forgottenByKeySql(schema: string): string {
  return `SELECT run_id::text AS run_id, tenant_id, tool_name, forgotten_by, forgotten_at, reason
FROM ${forgottenTable(schema)}
WHERE key_attribute = $1::text AND key_value = $2::text
  AND ($3::text IS NULL OR tenant_id = $3::text) AND ($4::text IS NULL OR tool_name = $4::text)
ORDER BY forgotten_at DESC, id DESC
LIMIT 100`;
}

/**
 * Settles unknown outcomes (`tool-ledger resolve`) and records each in the audit table, in one statement. Only rows
 * in status `unknown` change. `rerun` leaves a retryable failure, and marks the run's unsettled steps failed so the
 * next attempt runs them again instead of finding them unknown once more. $1 key, $2 tenant or null, $3 tool or
 * null, $4 resolution ('result', 'failed' or 'rerun'), $5 result JSON or null, $6 error JSON or null, $7 key
 * attribute, $8 key value (telemetry form), $9 by, $10 reason.
 */
export function resolveUnknownSql(schema: string): string {
  return `WITH settled AS (
  UPDATE ${runsTable(schema)} SET
    status = CASE WHEN $4::text = 'result' THEN 'succeeded' ELSE 'failed' END,
    final = ($4::text = 'failed'),
    result_json = CASE WHEN $4::text = 'result' THEN $5::json END,
    error_json = CASE WHEN $4::text = 'result' THEN NULL ELSE $6::jsonb END,
    steps = CASE WHEN $4::text = 'rerun' AND steps IS NOT NULL THEN (
      SELECT jsonb_object_agg(name, CASE WHEN step ->> 'status' = 'started'
        THEN step || '{"status": "failed"}'::jsonb ELSE step END)
      FROM jsonb_each(steps) AS s(name, step)) ELSE steps END,
    lease_owner = NULL, lease_expires_at = NULL, completed_at = now(), updated_at = now()
  WHERE idempotency_key = $1::text AND ($2::text IS NULL OR tenant_id = $2::text)
    AND ($3::text IS NULL OR tool_name = $3::text) AND status = 'unknown'
  RETURNING id, tenant_id, tool_name
)
INSERT INTO ${resolvedTable(schema)} (run_id, tenant_id, tool_name, key_attribute, key_value, resolution, resolved_by, reason)
SELECT id, tenant_id, tool_name, $7::text, $8::text, $4::text, $9::text, $10::text FROM settled
RETURNING run_id::text AS run_id, tenant_id, tool_name, resolved_at`;
}

/** The unknown runs of a key, to check that `resolve` names exactly one. $1 key, $2 tenant or null, $3 tool or null. */
export function unknownRunsByKeySql(schema: string): string {
  return `SELECT id::text AS id, tenant_id, tool_name, parameter_hash, error_json FROM ${runsTable(schema)}
WHERE idempotency_key = $1::text AND ($2::text IS NULL OR tenant_id = $2::text)
  AND ($3::text IS NULL OR tool_name = $3::text) AND status = 'unknown'
ORDER BY tenant_id, tool_name`;
}

/** Whether the resolve audit table exists (migration 7). $1 schema. */
export const resolvedTableExistsSql = `SELECT to_regclass(format('%I.tool_runs_resolved', $1::text)) IS NOT NULL AS exists`;

/** The audit chain's entries of one run, oldest first (`inspect`, the console's run page). $1 run id. */
export function auditEntriesByRunSql(schema: string): string {
  return `SELECT ${AUDIT_COLUMNS} FROM ${auditTable(schema)} a
WHERE a.run_id = $1::bigint
ORDER BY a.at ASC, a.id ASC
LIMIT 100`;
}
