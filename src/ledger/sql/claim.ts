import { CLAIM, type JudgedPlaceholders, READ } from './claim-fields.js';
import { expired, leaseLive, partitionKeyOf, RUN_COLUMNS } from './columns.js';
import { runsTable } from './names.js';

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
