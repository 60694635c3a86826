import type { Completion } from '../fence.js';
import { epochMs, msUntil, RUN_COLUMNS } from './columns.js';
import { runsTable } from './names.js';

/**
 * Every write of a running execution carries its fence: the run's key (its primary key since migration 8, which
 * starts with the tenant, so the write routes to one shard), the attempt and the lease owner. Only the current
 * owner of the current attempt writes. $1 tenant, $2 tool, $3 key, $4 attempt, $5 lease owner; each fenced
 * statement's own parameters follow from $6.
 */
export const KEY_FENCE = `tenant_id = $1::text AND tool_name = $2::text AND idempotency_key = $3::text AND attempt = $4::integer
  AND lease_owner = $5::text AND status = 'in_progress'`;

/**
 * Where a fenced write looks for its row: by the key alone (the table layout, whose key is unique), or also by
 * the partition key its claim read (the partitioned layout: the row's exact `expires_at`, as the claim function
 * returns it in `partition_key`), so the write plans and touches one partition instead of every one. A running
 * attempt's `expires_at` only moves with a takeover, which ends the fence anyway, or with its own completion.
 */
export type FenceScope = 'key' | 'partition';

/** The fence; a partition-scoped one takes the partition key as the parameter after the statement's own last one. */
const fence = (scope: FenceScope, lastParam: number) =>
  scope === 'key' ? KEY_FENCE : `${KEY_FENCE} AND expires_at = $${lastParam + 1}::timestamptz`;

/** What a completion sets (`completeSql` and its server function): the fence's $1 to $5 come first. */
export const COMPLETION_SET = `status = $6::text, final = $7::boolean, result_json = $8::json,
  error_json = $9::jsonb, lease_owner = NULL, lease_expires_at = NULL, completed_at = now(), updated_at = now(),
  expires_at = CASE WHEN expires_at > now() THEN expires_at ELSE now() + make_interval(secs => $10::float8) END`;

/** What a completion answers (`Completed`), read from the row as updated. */
export const COMPLETION_TIMES = `${epochMs('completed_at')} AS completed_at_ms, ${msUntil('expires_at')} AS expires_in_ms`;

/** The types of a completion's $1 to $11, in order. */
export const COMPLETION_PARAMETER_TYPES = Object.freeze([
  'text',
  'text',
  'text',
  'integer',
  'text',
  'text',
  'boolean',
  'json',
  'jsonb',
  'float8',
  'text',
] as const);

/** A completion's parameters, in the order `completeSql` and its server functions number them ($1 to $11). */
export function completionParams(
  completion: Completion,
  errorText: string | null,
  channel: string,
): unknown[] {
  return [
    completion.runKey.tenant,
    completion.runKey.tool,
    completion.runKey.key,
    completion.attempt,
    completion.leaseOwner,
    completion.status,
    completion.final,
    completion.resultJson,
    errorText,
    completion.ttlSeconds,
    channel,
  ];
}

/**
 * The fenced completion: only the current owner of the current attempt can finish a run, and finishing wakes
 * the waiters, if any registered (see the claim). The fence's $1 to $5, then $6 status, $7 final, $8 result json,
 * $9 error json, $10 ttl seconds, $11 notify channel.
 *
 * The TTL counts from the claim, which already set `expires_at`: keeping it leaves every indexed column as it
 * was, so the update is HOT (migration 5). Only a handler that outlasted its TTL moves the expiry, to `ttlSeconds`
 * after the completion, so no result is born expired.
 *
 * One plain `UPDATE … RETURNING`, the notification in its `RETURNING`: the same statement as a writing `WITH` took
 * about 100 µs more to parse and plan where it is sent unnamed (`bench/fleet.mjs bouncer`). `RETURNING` reads the
 * row as updated, as the `WITH`'s did.
 */
export function completeSql(schema: string, scope: FenceScope = 'key'): string {
  return `UPDATE ${runsTable(schema)} SET ${COMPLETION_SET}
WHERE ${fence(scope, 11)}
RETURNING ${COMPLETION_TIMES},
  CASE WHEN waiters THEN pg_notify($11::text, id::text) END AS notify`;
}

/**
 * Marks a step started, fenced like the completion, and draws the run's step token at its first step (kept for
 * the run's life). Returns the token. The fence's $1 to $5, then $6 step name, $7 new token.
 */
export function startStepSql(schema: string, scope: FenceScope = 'key'): string {
  return `UPDATE ${runsTable(schema)} SET step_token = coalesce(step_token, $7::text),
  steps = coalesce(steps, '{}'::jsonb) || jsonb_build_object($6::text,
    jsonb_build_object('status', 'started', 'attempt', $4::integer, 'startedAt', now())),
  updated_at = now()
WHERE ${fence(scope, 7)}
RETURNING step_token`;
}

/**
 * Records how a step ended, fenced like the completion. The result is kept as JSON text inside the jsonb, so a
 * replay returns it byte for byte as the first run saw it. The fence's $1 to $5, then $6 step name, $7 status
 * ('succeeded' or 'failed'), $8 result JSON text, $9 error JSON.
 */
export function finishStepSql(schema: string, scope: FenceScope = 'key'): string {
  return `UPDATE ${runsTable(schema)} SET
  steps = coalesce(steps, '{}'::jsonb) || jsonb_build_object($6::text, jsonb_build_object('status', $7::text,
    'attempt', $4::integer, 'startedAt', coalesce(steps -> $6::text -> 'startedAt', to_jsonb(now())),
    'completedAt', now(), 'result', $8::text, 'error', $9::jsonb)),
  updated_at = now()
WHERE ${fence(scope, 9)}
RETURNING id`;
}

/** Extends a lease, fenced like the completion. The fence's $1 to $5, then $6 lease seconds. */
export function renewLeaseSql(schema: string, scope: FenceScope = 'key'): string {
  return `UPDATE ${runsTable(schema)} SET lease_expires_at = now() + make_interval(secs => $6::float8), updated_at = now()
WHERE ${fence(scope, 6)}
RETURNING lease_expires_at`;
}

/** Counts a refused reuse of a key, for the support explorer. $1 tenant, $2 tool, $3 key. */
export function recordConflictSql(schema: string): string {
  return `UPDATE ${runsTable(schema)} SET conflict_count = conflict_count + 1, last_conflict_at = now()
WHERE tenant_id = $1::text AND tool_name = $2::text AND idempotency_key = $3::text`;
}

/** A job by id, within its tenant and tool. $1 tenant, $2 tool, $3 job id. */
export function findJobSql(schema: string): string {
  return `SELECT ${RUN_COLUMNS('r')} FROM ${runsTable(schema)} r
WHERE tenant_id = $1::text AND tool_name = $2::text AND job_id = $3::text`;
}
