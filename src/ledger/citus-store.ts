import { ToolLedgerError } from '../contract/errors.js';
import type { Queryable } from '../contract/types.js';
import { citusCompleteSql, citusLateCompleteSql, notifySql } from './citus-sql.js';
import type { ClaimPath } from './claim-path.js';
import { CLAIM_TRIES } from './partitioned-sql.js';
import type { ClaimStep, Completed } from './run-row.js';
import { claimExistingSql, claimReadSql, insertRunSql } from './sql/claim.js';
import { type ClaimFields, claimParams, claimReadParams, insertRunParams } from './sql/claim-fields.js';

/**
 * How the store claims and completes on a schema distributed with Citus: in statements Citus routes to the tenant's
 * shard, each a plain one it plans cheaply where it can (see citus-sql.ts for why the single-server statements do
 * not route). The store picks these once, at start (`layoutStatements()` in layouts.ts).
 */
export interface CitusStatements {
  readonly insert: string;
  readonly read: string;
  readonly claim: string;
  readonly completeInTime: string;
  readonly completeLate: string;
  readonly notify: string;
}

export function citusStatements(schema: string): CitusStatements {
  return Object.freeze({
    insert: insertRunSql(schema),
    read: claimReadSql(schema),
    claim: claimExistingSql(schema),
    completeInTime: citusCompleteSql(schema),
    completeLate: citusLateCompleteSql(schema),
    notify: notifySql(),
  });
}

/**
 * The claim, in steps: the insert of a fresh key, or the read of the key's row, first as `path` predicts; the read
 * answers alone when it is `decisive` (a replay, a conflict), else the claim (`claimExistingSql`) takes the row over
 * or registers the waiter (plain Postgres does all of this in one statement, `claimSql`, whose writing CTEs cost
 * Citus 2-3 ms to plan and run against 0.3 ms for the read). A key whose row is gone by the claim, or one another
 * caller inserts between the read and the insert, goes round again; a row that comes and goes every time (a purge
 * or `forget` racing claims of one key) ends after `CLAIM_TRIES` rounds with a retryable error, nothing run.
 */
export async function claimInSteps(
  db: Queryable,
  sql: CitusStatements,
  path: ClaimPath,
  request: ClaimFields,
): Promise<ClaimStep> {
  let insertNext = path.insertFirst;
  for (let round = 0; round < CLAIM_TRIES; round++) {
    if (insertNext) {
      const inserted = (await db.query<{ id: string }>(sql.insert, insertRunParams(request))).rows;
      if (round === 0) path.found(inserted.length === 0);
      if (inserted[0]) return { kind: 'fresh', id: inserted[0].id };
    }
    let rows = (await db.query<Record<string, unknown>>(sql.read, claimReadParams(request))).rows;
    if (round === 0 && !insertNext) path.found(rows.length > 0);
    if (rows[0] && !rows[0].decisive)
      rows = (await db.query<Record<string, unknown>>(sql.claim, claimParams(request))).rows;
    if (rows[0]) return { kind: 'row', rows };
    insertNext = true;
  }
  throw new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `The ledger could not claim the idempotency key: its row was deleted and made again ${CLAIM_TRIES} times while this claim looked for it (a purge or tool-ledger forget racing claims of the key). Nothing ran; retry with the same idempotency key in a moment.`,
    { retryable: true },
  );
}

/** What Citus's completion returns: the times as the database wrote them, and whether anyone waits. */
interface CompletedRow {
  readonly id: string;
  readonly completed_at: Date;
  readonly expires_at: Date;
  readonly waiters: boolean;
}

/**
 * The completion (see `citusCompleteSql`): of a run within its TTL, which keeps the expiry; when that finds no row,
 * of one that outlasted its TTL, which moves it; then the notice to waiters, if any registered, sent on the
 * coordinator, where they listen. Inside the handler's transaction (`inTransaction`) the notice goes out at its
 * commit, as the one-statement completion's does; an autocommit completion is saved already, so a notice that fails
 * is dropped: waiters also wake on their backoff timer. `params`: the fence's five, then status, final, result JSON
 * and error JSON. Undefined when the fence refused the write.
 */
export async function completeOnCitus(
  db: Queryable,
  sql: CitusStatements,
  params: readonly unknown[],
  ttlSeconds: number,
  channel: string,
  inTransaction: boolean,
): Promise<Completed | undefined> {
  let rows = (await db.query<CompletedRow>(sql.completeInTime, [...params])).rows;
  if (rows.length === 0)
    rows = (await db.query<CompletedRow>(sql.completeLate, [...params, ttlSeconds])).rows;
  const row = rows[0];
  if (row === undefined) return undefined;
  if (row.waiters) {
    const notice = db.query(sql.notify, [channel, row.id]);
    await (inTransaction ? notice : notice.catch(() => {}));
  }
  // Both times are the database's, from the same statement: the expiry left is their difference.
  const completedMs = row.completed_at.getTime();
  return { completed_at_ms: completedMs, expires_in_ms: row.expires_at.getTime() - completedMs };
}
