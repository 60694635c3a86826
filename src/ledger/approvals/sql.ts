import { quoteLiteral } from '../migrations.js';
import { KEY_LOCK_CLASS } from '../partitioned-sql.js';
import { TAKE } from '../sql/claim-fields.js';
import { epochMs, expired, RUN_COLUMNS } from '../sql/columns.js';
import { runsTable } from '../sql/names.js';
import { KEY_FENCE } from '../sql/runs.js';

/**
 * The statements of approvals (docs/ledger.md, "Approvals"). None of them is on a path a tool without `approval`
 * takes: the claim is the same statement for every tool, and these run only when a row is, or is about to be,
 * awaiting a decision. Every one names the key's three columns, tenant first, so it routes to one shard.
 *
 * A run needing approval goes: claimed (`in_progress`, as any first call) -> `awaiting_approval` (`parkSql`, under
 * the claim's fence) -> `approved` or `declined` (`decideSql`, one transaction) -> for an approval, the next call
 * takes the row over (`takeApprovedSql`) and runs the handler as a takeover would. Expired is never stored: an
 * `awaiting_approval` row past its `approval_deadline` is expired.
 */

/** The key of a row by its three parameters. */
const KEY = (a: string) =>
  `${a}.tenant_id = $1::text AND ${a}.tool_name = $2::text AND ${a}.idempotency_key = $3::text`;

/**
 * The run's creation time as exact text (microseconds since the epoch): a decision records it, and an approval
 * counts only for the run it was given to. A claim that takes a row over after its TTL (a new intent under an old
 * key) sets a new `created_at`, which leaves the old approval behind.
 */
const createdAtText = (a: string) => `(extract(epoch FROM ${a}.created_at) * 1000000)::bigint::text`;

/**
 * Turns the run a call just claimed into one awaiting approval, under the claim's fence, and wakes the duplicates
 * that registered as waiting on it. The row keeps its TTL past the deadline, so an expired approval answers
 * `APPROVAL_EXPIRED` for `ttlSeconds` before the key counts as new. The fence's $1 to $5, then $6 approval TTL
 * seconds, $7 TTL seconds, $8 the arguments as JSON text, $9 notify channel.
 */
export function parkSql(schema: string): string {
  return `WITH parked AS (
  UPDATE ${runsTable(schema)} SET status = 'awaiting_approval', lease_owner = NULL, lease_expires_at = NULL,
    approval_deadline = now() + make_interval(secs => $6::float8),
    expires_at = now() + make_interval(secs => $6::float8 + $7::float8),
    approval = jsonb_build_object('arguments', $8::jsonb), updated_at = now()
  WHERE ${KEY_FENCE}
  RETURNING id, approval_deadline, waiters
)
SELECT id::text AS id, ${epochMs('approval_deadline')} AS deadline_ms,
  CASE WHEN waiters THEN pg_notify($9::text, id::text) END AS notify
FROM parked`;
}

/** What the approval read and the decision's look-up return of a row. */
const APPROVAL_COLUMNS = (a: string) => `${a}.id::text AS id, ${a}.status, ${a}.user_id, ${a}.parameter_hash,
  ${a}.attempt, ${a}.approval, ${epochMs(`${a}.approval_deadline`)} AS deadline_ms,
  coalesce(${a}.approval_deadline <= now(), false) AS deadline_passed, ${expired(a)} AS ttl_over,
  coalesce(${a}.approval ->> 'runCreatedAt' = ${createdAtText(a)}, false) AS approval_current`;

/** A key's approval state (`ApprovalState`). $1 tenant, $2 tool, $3 key. */
export function approvalStateSql(schema: string): string {
  return `SELECT ${APPROVAL_COLUMNS('r')} FROM ${runsTable(schema)} r WHERE ${KEY('r')}`;
}

/**
 * The next call after an approval takes the approved row over, as a claim takes over a retryable failure: a new
 * attempt under this caller's lease, the approval kept. Only the same user's call with the intent's fingerprint,
 * only the row as the caller read it (`attempt`), and only while the row is within its TTL. Answers the claim's
 * columns plus the approval, or no row when another caller took it first. Parameters: `takeParams(fields,
 * attempt)` (sql/claim-fields.ts), numbered by `TAKE`, whose first three are the key as `KEY` reads it.
 */
export function takeApprovedSql(schema: string): string {
  return `UPDATE ${runsTable(schema)} AS r SET status = 'in_progress', attempt = r.attempt + 1, final = false,
  lease_owner = ${TAKE.leaseOwner}, lease_expires_at = now() + make_interval(secs => ${TAKE.leaseSeconds}),
  result_json = NULL, error_json = NULL, trace_id = ${TAKE.traceId}, span_id = ${TAKE.spanId}, started_at = now(),
  updated_at = now(), completed_at = NULL, expires_at = now() + make_interval(secs => ${TAKE.ttlSeconds})
WHERE ${KEY('r')} AND r.status = 'approved' AND r.attempt = ${TAKE.attempt}
  AND r.parameter_hash = ${TAKE.paramsHash} AND r.user_id IS NOT DISTINCT FROM ${TAKE.user} AND NOT ${expired('r')}
RETURNING 'taken' AS claim, ${RUN_COLUMNS('r')}, false AS takeover_due, false AS waiting, r.steps, r.step_token,
  false AS lapsed, r.approval`;
}

/**
 * The decision's lock: the key's advisory lock (the class the partitioned layout's claim takes), held to the end of
 * the decision's transaction, before the row's own lock. $1 tenant, $2 tool, $3 key.
 */
export function decisionLockSql(schema: string): string {
  return `SELECT pg_advisory_xact_lock(${KEY_LOCK_CLASS}, hashtext(${quoteLiteral(schema)} || chr(31) || $1::text || chr(31) || $2::text || chr(31) || $3::text))`;
}

/**
 * The row a decision is about, locked until the decision commits: a second approver waits here and then reads the
 * first one's decision. Also the transaction's clock, the decision's time. $1 tenant, $2 tool, $3 key.
 */
export function decisionRowSql(schema: string): string {
  return `SELECT ${APPROVAL_COLUMNS('r')}, ${createdAtText('r')} AS created_at_text, ${epochMs('now()')} AS now_ms
FROM ${runsTable(schema)} r WHERE ${KEY('r')}
FOR UPDATE`;
}

/**
 * Records a decision on a row the decision's look-up locked and found awaiting: `approved` leaves the row for the
 * next call to take over; `declined` is final, with the stored error every later call replays, and the key is
 * remembered for `ttlSeconds` from now at least. Wakes the callers waiting for it. $1 tenant, $2 tool, $3 key, $4
 * status, $5 the decision as JSON text (merged into `approval`), $6 the decline's stored error (JSON text, or
 * NULL), $7 TTL seconds, $8 notify channel.
 */
export function decideSql(schema: string): string {
  return `WITH decided AS (
  UPDATE ${runsTable(schema)} r SET status = $4::text, approval = coalesce(r.approval, '{}'::jsonb) || $5::jsonb,
    final = $4::text = 'declined', error_json = $6::jsonb,
    completed_at = CASE WHEN $4::text = 'declined' THEN now() END,
    expires_at = greatest(r.expires_at, now() + make_interval(secs => $7::float8)), updated_at = now()
  WHERE ${KEY('r')} AND r.status = 'awaiting_approval'
  RETURNING r.id
)
SELECT id::text AS id, pg_notify($8::text, id::text) AS notify FROM decided`;
}

/**
 * Calls awaiting a decision, oldest first, for the inbox and `tool-ledger list`: the deadline not passed, the
 * row within its TTL. $1 tenant or NULL for every tenant, $2 tool or NULL, $3 limit.
 */
export function listAwaitingSql(schema: string): string {
  return `SELECT r.tenant_id, r.tool_name, r.idempotency_key, r.user_id, r.parameter_hash, r.id::text AS id,
  r.approval -> 'arguments' AS arguments, ${epochMs('r.created_at')} AS requested_ms,
  ${epochMs('r.approval_deadline')} AS deadline_ms
FROM ${runsTable(schema)} r
WHERE r.status = 'awaiting_approval' AND r.approval_deadline > now()
  AND ($1::text IS NULL OR r.tenant_id = $1::text) AND ($2::text IS NULL OR r.tool_name = $2::text)
ORDER BY r.created_at, r.id
LIMIT $3::integer`;
}

/**
 * How many calls await a decision, and the oldest one's age in seconds (the approval gauges and their alert), by
 * tenant for the tenants named in $1 (a text array: the telemetry's `metricTenants`) and as one group (tenant
 * NULL) for every other: at most one row more than $1 has elements, whatever the number of tenants. A full read
 * of the awaiting rows: no index is added for it, so a first execution pays nothing, and it runs once per metric
 * collection.
 */
export function countAwaitingSql(schema: string): string {
  return `SELECT CASE WHEN r.tenant_id = ANY($1::text[]) THEN r.tenant_id END AS tenant,
  count(*)::integer AS waiting,
  coalesce(extract(epoch FROM now() - min(r.updated_at)), 0)::float8 AS oldest_seconds
FROM ${runsTable(schema)} r
WHERE r.status = 'awaiting_approval' AND r.approval_deadline > now()
GROUP BY 1`;
}
