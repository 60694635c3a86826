/**
 * Every statement tool-ledger runs, as small functions of the schema. Identifiers are quoted here and nowhere
 * else; values always travel as parameters.
 */

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

export function isValidSchemaName(schema: string): boolean {
  return IDENTIFIER.test(schema);
}

export function quoteIdent(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}

export function runsTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_runs`;
}

/** The audit of `tool-ledger forget`: who deleted which key's runs, when and why. */
export function forgottenTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_runs_forgotten`;
}

/** The audit of `tool-ledger resolve`: who settled which unknown outcome, when and how (migration 7). */
export function resolvedTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_runs_resolved`;
}

/** Per-deployment settings (migration 4): today only the key-hash secret telemetry and the CLI share. */
export function settingsTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_ledger_settings`;
}

/** The name of the key-hash secret's row in the settings table. */
export const KEY_HASH_SECRET_SETTING = 'key_hash_secret';

/** One setting's value. $1 name. */
export function readSettingSql(schema: string): string {
  return `SELECT value FROM ${settingsTable(schema)} WHERE name = $1::text`;
}

/** Stores a setting unless one is there: concurrent first starts all keep the first value. $1 name, $2 value. */
export function insertSettingSql(schema: string): string {
  return `INSERT INTO ${settingsTable(schema)} (name, value) VALUES ($1::text, $2::text) ON CONFLICT (name) DO NOTHING`;
}

/**
 * Replaces a setting (or stores it). $1 name, $2 value. The update takes its time from the row it would have
 * inserted: Citus refuses a function in `DO UPDATE SET` on its tables (the settings are a reference table there).
 */
export function replaceSettingSql(schema: string): string {
  return `INSERT INTO ${settingsTable(schema)} (name, value, updated_at) VALUES ($1::text, $2::text, now())
ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
RETURNING updated_at`;
}

/** A run whose lease still holds: its owner is (presumably) working on it. */
export const leaseLive = (alias: string) =>
  `(${alias}.status = 'in_progress' AND ${alias}.lease_expires_at > now())`;

/** Past its TTL, so the key counts as new; a live lease always outlives the TTL. */
export const expired = (alias: string) => `(${alias}.expires_at <= now() AND NOT ${leaseLive(alias)})`;

/**
 * What a claim sends, by name. The claim's parameters are numbered once, here, in this order: `claimParams` sends
 * the values in it and `CLAIM` gives each its placeholder, so no statement hard-codes a `$n`.
 */
export interface ClaimFields {
  readonly tenant: string;
  readonly tool: string;
  readonly key: string;
  readonly user: string | undefined;
  readonly paramsHash: string;
  readonly leaseOwner: string;
  readonly leaseSeconds: number;
  readonly ttlSeconds: number;
  readonly traceId: string | undefined;
  readonly spanId: string | undefined;
  /** The job id of a new run. */
  readonly jobId: string | undefined;
  /** Whether a lapsed lease may be taken over. */
  readonly allowLeaseTakeover: boolean;
  /** Whether the caller would wait for a run in flight (it registers as waiting, see `claimSql`). */
  readonly wouldWait: boolean;
}

/** The fresh run's columns, shared by the bare insert and the claim, then the claim's own two; with their types. */
const FRESH_RUN_TYPES = {
  tenant: 'text',
  tool: 'text',
  key: 'text',
  user: 'text',
  paramsHash: 'text',
  leaseOwner: 'text',
  leaseSeconds: 'float8',
  ttlSeconds: 'float8',
  traceId: 'text',
  spanId: 'text',
  jobId: 'text',
} as const;
const CLAIM_TYPES = {
  ...FRESH_RUN_TYPES,
  allowLeaseTakeover: 'boolean',
  wouldWait: 'boolean',
} as const satisfies Record<keyof ClaimFields, string>;

type Placeholders<T> = { readonly [K in keyof T]: string };

/** `$1::text`, `$2::text`, ... in the object's order. */
function placeholders<T extends Record<string, string>>(types: T): Placeholders<T> {
  return Object.fromEntries(
    Object.entries(types).map(([name, type], i) => [name, `$${i + 1}::${type}`]),
  ) as Placeholders<T>;
}

const CLAIM = placeholders(CLAIM_TYPES);
const FRESH_RUN_NAMES = Object.freeze(Object.keys(FRESH_RUN_TYPES) as (keyof typeof FRESH_RUN_TYPES)[]);
const CLAIM_NAMES = Object.freeze(Object.keys(CLAIM_TYPES) as (keyof ClaimFields)[]);

function valuesOf(fields: ClaimFields, names: readonly (keyof ClaimFields)[]): unknown[] {
  const values = new Array<unknown>(names.length);
  // Absent optional fields travel as SQL NULL.
  for (let i = 0; i < names.length; i++) values[i] = fields[names[i]!] ?? null;
  return values;
}

/** The parameters of `claimSql`, in the order its placeholders number them. */
export function claimParams(fields: ClaimFields): unknown[] {
  return valuesOf(fields, CLAIM_NAMES);
}

/** The parameters of `insertRunSql`: the fresh run's fields only. */
export function insertRunParams(fields: ClaimFields): unknown[] {
  return valuesOf(fields, FRESH_RUN_NAMES);
}

/** What the claim's rules and its read (`claimReadSql`) judge a row by, and their types. */
const READ_TYPES = {
  tenant: 'text',
  tool: 'text',
  key: 'text',
  user: 'text',
  paramsHash: 'text',
  allowLeaseTakeover: 'boolean',
  wouldWait: 'boolean',
} as const satisfies Partial<Record<keyof ClaimFields, string>>;
type JudgedPlaceholders = Placeholders<typeof READ_TYPES>;
const READ = placeholders(READ_TYPES);
const READ_NAMES = Object.freeze(Object.keys(READ_TYPES) as (keyof typeof READ_TYPES)[]);

/** The parameters of `claimReadSql`. */
export function claimReadParams(fields: ClaimFields): unknown[] {
  return valuesOf(fields, READ_NAMES);
}

/**
 * The rules of the claim in one place: a row the claim takes over (expired, a retryable failure, or a lapsed lease
 * when takeovers are allowed) for the same user and parameters. TypeScript reads the result as `takeover_due`.
 */
const TAKEOVER = (alias: string, p: JudgedPlaceholders = CLAIM) => `(${expired(alias)}
    OR (${alias}.parameter_hash = ${p.paramsHash} AND ${alias}.user_id IS NOT DISTINCT FROM ${p.user} AND (
      (${alias}.status = 'failed' AND NOT ${alias}.final)
      OR (${alias}.status = 'in_progress' AND ${alias}.lease_expires_at <= now() AND ${p.allowLeaseTakeover})
    )))`;

/**
 * A timestamp as whole milliseconds since the epoch, truncated as the drivers truncate when they parse one into a
 * `Date` (so a `Date` built from it equals the one a later read of the column gives), and a float8 the driver reads
 * as a number without the date parser, which is dearer.
 */
const epochMs = (column: string) =>
  `round(extract(epoch FROM date_trunc('milliseconds', ${column})) * 1000)::float8`;

/** Milliseconds from the database's `now()` to a timestamp: a float8 the driver reads as a number. */
const msUntil = (column: string) => `date_part('epoch', ${column} - now()) * 1000`;

/**
 * What every read returns of a row, in the shape `RunRow` expects, with the lease flag SQL decides so TypeScript
 * never re-derives the rules. Kept short: every column costs the driver a field to describe and parse per call.
 */
const RUN_COLUMNS = (
  a: string,
) => `${a}.id::text AS id, ${a}.user_id, ${a}.parameter_hash, ${a}.status, ${a}.final,
  ${a}.attempt, ${a}.lease_owner, ${msUntil(`${a}.lease_expires_at`)} AS lease_remaining_ms, ${a}.result_json,
  ${a}.error_json, ${a}.job_id, ${a}.trace_id, ${a}.span_id, ${a}.completed_at,
  ${msUntil(`${a}.expires_at`)} AS expires_in_ms, ${leaseLive(a)} AS lease_live`;

/**
 * The claimed key's row, found by its primary key (migration 8) through the parameters rather than a join column,
 * so every part of the claim names the tenant as a constant and a sharded deployment routes it to one shard.
 */
const CLAIMED_ROW = (a: string, p: JudgedPlaceholders = CLAIM) =>
  `${a}.tenant_id = ${p.tenant} AND ${a}.tool_name = ${p.tool} AND ${a}.idempotency_key = ${p.key}`;

/** The fresh run's columns and the values the claim and the bare insert give them. */
const FRESH_RUN_COLUMNS = `tenant_id, tool_name, idempotency_key, user_id, parameter_hash, status, attempt,
    lease_owner, lease_expires_at, job_id, trace_id, span_id, expires_at`;
const FRESH_RUN_VALUES = `${CLAIM.tenant}, ${CLAIM.tool}, ${CLAIM.key}, ${CLAIM.user}, ${CLAIM.paramsHash}, 'in_progress', 1,
    ${CLAIM.leaseOwner}, now() + make_interval(secs => ${CLAIM.leaseSeconds}), ${CLAIM.jobId}, ${CLAIM.traceId},
    ${CLAIM.spanId}, now() + make_interval(secs => ${CLAIM.ttlSeconds})`;

/**
 * The claim: one atomic statement that inserts a fresh run, or takes over an expired row, a retryable failure or
 * a lapsed lease, or else returns the row as it stands. The `attempt` match fences concurrent takeovers.
 * Parameters: `claimParams(fields)` (see `ClaimFields`).
 *
 * A caller that would wait registers in this same statement (`waiting`): it sets the row's `waiters` flag while
 * the run is still in flight, under the row lock the completion also takes. Either the flag commits first and the
 * completion sees it and notifies, or the completion commits first and the registration finds the row no longer
 * in flight (`waiting` false, so the caller claims again and replays). No wake-up falls between the two.
 */
export function claimSql(schema: string): string {
  const t = runsTable(schema);
  return `WITH ${existingCte(t)}, ${insertedCte(t, 'after-existing')}, ${takenCte(t)}, ${registeredCte(t)}
${INSERTED_BRANCH(false)}
UNION ALL
${TAKEN_BRANCH(false)}
UNION ALL
${EXISTING_BRANCH(false)}`;
}

/**
 * Which rows of the key a part of the claim reads: by default the key's row wherever it is; the partitioned
 * layout's claim function narrows every part to the partition it found the row in (a condition on the alias).
 */
export type ClaimNarrowing = (alias: string) => string;

const narrowed = (narrow: ClaimNarrowing | undefined, alias: string) =>
  narrow ? ` AND ${narrow(alias)}` : '';

/**
 * How the parts of the claim read the clock. `inline`: `now()` wherever a rule needs it. `once`, for Citus: the
 * read of the key's row also answers whether it had expired and what time it is, and the takeover's `CASE`s read
 * those columns. Citus refuses an update whose `CASE` calls a function that is not immutable (`now()`, and even
 * `timestamptz + interval`), since it evaluates such functions on the coordinator before it routes the statement,
 * and a `CASE` may not evaluate every branch. `MATERIALIZED` keeps the planner from inlining the read, which would
 * put `now()` back into the `CASE`s.
 */
export type ClaimClock = 'inline' | 'once';

const existingCte = (t: string, narrow?: ClaimNarrowing, clock: ClaimClock = 'inline') =>
  clock === 'inline'
    ? `existing AS (
  SELECT * FROM ${t} e WHERE ${CLAIMED_ROW('e')}${narrowed(narrow, 'e')}
)`
    : `existing AS MATERIALIZED (
  SELECT e.*, ${expired('e')} AS ttl_over, now() AS claimed_at FROM ${t} e WHERE ${CLAIMED_ROW('e')}${narrowed(narrow, 'e')}
)`;

/**
 * The fresh run's insert: after the read of `existing` (only when it found nothing, and the unique key settles a
 * race), or alone, for a caller that has already found no row under a lock of its own.
 */
const insertedCte = (t: string, mode: 'after-existing' | 'alone') => `inserted AS (
  INSERT INTO ${t} AS r (${FRESH_RUN_COLUMNS})
  SELECT ${FRESH_RUN_VALUES}${
    mode === 'after-existing'
      ? `
  WHERE NOT EXISTS (SELECT 1 FROM existing)
  ON CONFLICT (tenant_id, tool_name, idempotency_key) DO NOTHING`
      : ''
  }
  RETURNING r.*
)`;

const takenCte = (t: string, narrow?: ClaimNarrowing, clock: ClaimClock = 'inline') => {
  const ttlOver = clock === 'inline' ? expired('e') : 'e.ttl_over';
  const at = clock === 'inline' ? 'now()' : 'e.claimed_at';
  return `taken AS (
  UPDATE ${t} AS r SET
    attempt = CASE WHEN ${ttlOver} THEN 1 ELSE r.attempt + 1 END,
    job_id = CASE WHEN ${ttlOver} THEN ${CLAIM.jobId} ELSE coalesce(r.job_id, ${CLAIM.jobId}) END,
    created_at = CASE WHEN ${ttlOver} THEN ${at} ELSE r.created_at END,
    conflict_count = CASE WHEN ${ttlOver} THEN 0 ELSE r.conflict_count END,
    last_conflict_at = CASE WHEN ${ttlOver} THEN NULL ELSE r.last_conflict_at END,
    user_id = ${CLAIM.user}, parameter_hash = ${CLAIM.paramsHash}, status = 'in_progress', final = false,
    lease_owner = ${CLAIM.leaseOwner}, lease_expires_at = now() + make_interval(secs => ${CLAIM.leaseSeconds}),
    result_json = NULL, error_json = NULL, trace_id = ${CLAIM.traceId}, span_id = ${CLAIM.spanId},
    started_at = now(), updated_at = now(), completed_at = NULL,
    expires_at = now() + make_interval(secs => ${CLAIM.ttlSeconds}),
    waiters = CASE WHEN ${ttlOver} THEN false ELSE r.waiters END,
    steps = CASE WHEN ${ttlOver} THEN NULL ELSE r.steps END,
    step_token = CASE WHEN ${ttlOver} THEN NULL ELSE r.step_token END
  FROM existing e
  WHERE ${CLAIMED_ROW('r')}${narrowed(narrow, 'r')} AND r.attempt = e.attempt AND r.status = e.status AND ${TAKEOVER('r')}
  RETURNING r.*
)`;
};

const registeredCte = (t: string, narrow?: ClaimNarrowing) => `registered AS (
  -- Disjoint from \`taken\`: a live lease is never expired nor lapsed, so no row is updated twice.
  UPDATE ${t} AS r SET waiters = true
  FROM existing e
  WHERE ${CLAIM.wouldWait} AND ${CLAIMED_ROW('r')}${narrowed(narrow, 'r')} AND r.attempt = e.attempt AND ${leaseLive('r')}
    AND r.parameter_hash = ${CLAIM.paramsHash} AND r.user_id IS NOT DISTINCT FROM ${CLAIM.user}
  RETURNING r.id
)`;

/** The claim's three answers; a located one also returns the row's partition key (the partitioned layout's). */
const located = (yes: boolean, alias: string) => (yes ? `, ${partitionKeyOf(alias)} AS partition_key` : '');

const INSERTED_BRANCH = (
  loc: boolean,
) => `SELECT 'inserted' AS claim, ${RUN_COLUMNS('inserted')}, false AS takeover_due, false AS waiting,
  NULL::jsonb AS steps, NULL::text AS step_token, false AS lapsed${located(loc, 'inserted')} FROM inserted`;

const TAKEN_BRANCH = (
  loc: boolean,
) => `SELECT 'taken' AS claim, ${RUN_COLUMNS('taken')}, false AS takeover_due, false AS waiting, taken.steps,
  taken.step_token, EXISTS (SELECT 1 FROM existing e WHERE e.status = 'in_progress' AND NOT ${expired('e')}) AS lapsed${located(loc, 'taken')}
FROM taken`;

const EXISTING_BRANCH = (
  loc: boolean,
) => `SELECT 'existing' AS claim, ${RUN_COLUMNS('existing')}, ${TAKEOVER('existing')} AS takeover_due,
  EXISTS (SELECT 1 FROM registered) AS waiting,
  -- Only a run in flight needs its steps (a lost claim taken back); replays never ship them.
  CASE WHEN existing.status = 'in_progress' THEN existing.steps END AS steps,
  CASE WHEN existing.status = 'in_progress' THEN existing.step_token END AS step_token, false AS lapsed${located(loc, 'existing')}
FROM existing WHERE NOT EXISTS (SELECT 1 FROM taken)`;

/**
 * The claim's two halves, for a caller that first looks the key up under a lock of its own (the partitioned
 * layout's claim function, which cannot use `ON CONFLICT`): the insert of a fresh run when it found none, and
 * otherwise the claim of the row it found, every part of it narrowed to where it was found. The same parameters
 * as `claimSql`, and its columns plus `partition_key` (see `FenceScope`); the second returns no row when the row
 * moved or went between the look-up and it.
 */
export function claimFreshSql(schema: string): string {
  return `WITH ${insertedCte(runsTable(schema), 'alone')}
${INSERTED_BRANCH(true)}`;
}

/**
 * Citus's claim of a key whose row exists: `claimSql` without its insert, since Citus routes a statement with an
 * `INSERT` in a `WITH` to no single shard (it plans each part apart, several round trips that no longer share a
 * snapshot). The store sends the bare insert (`insertRunSql`) and this in turn, as `ClaimPath` predicts, each a
 * statement of the tenant's one shard; this one returns no row when the key has none. `claimSql`'s parameters and
 * columns. It reads the clock once (see `ClaimClock`).
 */
export function claimExistingSql(schema: string): string {
  const t = runsTable(schema);
  return `WITH ${existingCte(t, undefined, 'once')}, ${takenCte(t, undefined, 'once')}, ${registeredCte(t)}
${TAKEN_BRANCH(false)}
UNION ALL
${EXISTING_BRANCH(false)}`;
}

/**
 * Citus's read of a key's row before its claim: one plain look-up by the key, which Citus routes on its fast path
 * (a replay cost 0.3 ms there, against 2-3 ms for `claimExistingSql`, whose writing CTEs it plans in full every
 * time). It answers `claimExistingSql`'s columns for the row as they stand, and `decisive`: whether the claim
 * would answer the same, because it would neither take the row over (`TAKEOVER`) nor register a waiter on it, as
 * for a completed result, a final failure, an unknown outcome, another caller's parameters, or a run in flight for
 * a caller that would not wait. Otherwise the store sends the claim. No row: the key is free.
 * Parameters: `claimReadParams(fields)`.
 */
export function claimReadSql(schema: string): string {
  return `SELECT 'existing' AS claim, ${RUN_COLUMNS('r')}, false AS takeover_due, false AS waiting,
  CASE WHEN r.status = 'in_progress' THEN r.steps END AS steps,
  CASE WHEN r.status = 'in_progress' THEN r.step_token END AS step_token, false AS lapsed,
  NOT (${TAKEOVER('r', READ)} OR (${READ.wouldWait} AND ${leaseLive('r')} AND r.parameter_hash = ${READ.paramsHash}
    AND r.user_id IS NOT DISTINCT FROM ${READ.user})) AS decisive
FROM ${runsTable(schema)} r WHERE ${CLAIMED_ROW('r', READ)}`;
}

export function claimFoundSql(schema: string, narrow: ClaimNarrowing): string {
  const t = runsTable(schema);
  return `WITH ${existingCte(t, narrow)}, ${takenCte(t, narrow)}, ${registeredCte(t, narrow)}
${TAKEN_BRANCH(true)}
UNION ALL
${EXISTING_BRANCH(true)}`;
}

/**
 * The look-up before those halves: the key's row in every partition, by its expiry (which `claimFoundSql`'s
 * narrowing then names). `claimSql`'s parameters, of which it uses the key's three.
 */
export function claimLookupSql(schema: string): string {
  return `SELECT r.expires_at FROM ${runsTable(schema)} r WHERE ${CLAIMED_ROW('r')}`;
}

/**
 * The claim of a key no row holds yet: the fresh-run insert of `claimSql` on its own, which is all a first
 * execution needs. It returns only the id, since the caller knows every other column it wrote. No row back means
 * the key is taken (or was a moment ago): the caller sends the full claim, which judges that row. Parameters:
 * `insertRunParams(fields)`.
 */
export function insertRunSql(schema: string): string {
  return `INSERT INTO ${runsTable(schema)} (${FRESH_RUN_COLUMNS})
VALUES (${FRESH_RUN_VALUES})
ON CONFLICT (tenant_id, tool_name, idempotency_key) DO NOTHING
RETURNING id::text AS id`;
}

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

/** The partition key the claim function returns: `expires_at` exactly, in microseconds, in any session time zone. */
export const partitionKeyOf = (alias: string) =>
  `to_char(${alias}.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * The fenced completion: only the current owner of the current attempt can finish a run, and finishing wakes
 * the waiters, if any registered (see the claim). The fence's $1 to $5, then $6 status, $7 final, $8 result json,
 * $9 error json, $10 ttl seconds, $11 notify channel.
 *
 * The TTL counts from the claim, which already set `expires_at`: keeping it leaves every indexed column as it
 * was, so the update is HOT (migration 5). Only a handler that outlasted its TTL moves the expiry, to `ttlSeconds`
 * after the completion, so no result is born expired.
 */
export function completeSql(schema: string, scope: FenceScope = 'key'): string {
  return `WITH done AS (
  UPDATE ${runsTable(schema)} SET status = $6::text, final = $7::boolean, result_json = $8::json,
    error_json = $9::jsonb, lease_owner = NULL, lease_expires_at = NULL, completed_at = now(), updated_at = now(),
    expires_at = CASE WHEN expires_at > now() THEN expires_at ELSE now() + make_interval(secs => $10::float8) END
  WHERE ${fence(scope, 11)}
  RETURNING id, completed_at, expires_at, waiters
)
SELECT ${epochMs('completed_at')} AS completed_at_ms, ${msUntil('expires_at')} AS expires_in_ms,
  CASE WHEN waiters THEN pg_notify($11::text, id::text) END AS notify
FROM done`;
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

/**
 * The whole-table purge batch, for PostgreSQL 13 and partitioned tables (see purge-sweep.ts). Deletes one batch
 * of expired rows, skipping rows another purger holds, and answers a row for each. By key, the primary key: `id` has no
 * index since migration 8. No order: the expiry index is a BRIN (migration 8), which finds the expired ranges
 * but cannot sort them, and a batch that must be the oldest would sort every expired row each time. $1 batch size.
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
 * the BRIN would read every expired range of the whole table for each window, a sequential scan all of it.
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
