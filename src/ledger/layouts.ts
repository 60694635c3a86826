import type { Queryable } from '../contract/types.js';
import { citusFinishStepSql } from './citus-sql.js';
import { citusStatements, claimInSteps, completeOnCitus } from './citus-store.js';
import type { ClaimPath } from './claim-path.js';
import { type Completion, fenceParams, type RunFence } from './fence.js';
import type { Layout } from './partitioned.js';
import { maintainSql, partitionedClaimSql } from './partitioned-sql.js';
import type { ClaimStep, Completed } from './run-row.js';
import { claimSql, insertRunSql } from './sql/claim.js';
import { type ClaimFields, claimParams, insertRunParams } from './sql/claim-fields.js';
import {
  completeSql,
  completionParams,
  type FenceScope,
  findJobSql,
  finishStepSql,
  recordConflictSql,
  renewLeaseSql,
  startStepSql,
} from './sql/runs.js';
import { completedFromTimes, completeTimesCallSql, insertRunIdCallSql } from './sql/server-functions.js';

/**
 * A fenced write, by key; in the partitioned layout also in the claimed row's partition only, which is tried first
 * (see `FenceScope` in sql/runs.ts).
 */
export interface FencedStatement {
  readonly byKey: string;
  readonly inPartition: string | undefined;
}

/**
 * The statements of one layout of the schema behind one interface, chosen once per store (`layoutStatements`), so
 * the store never asks which layout it has: the table (the default), range partitions by expiry, or a schema
 * distributed by tenant with Citus. Driver failures propagate as they are; the store maps them.
 */
export interface LayoutStatements {
  /** The claim: the bare insert, the claim statement, or both in turn, as `path` predicts (see `ClaimPath`). */
  claim(db: Queryable, path: ClaimPath, request: ClaimFields): Promise<ClaimStep>;
  /**
   * The fenced completion, which wakes the waiters on `channel`; undefined when the fence refused. `inTransaction`:
   * inside the handler's transaction, so a notice sent apart goes out with its commit.
   */
  complete(
    db: Queryable,
    completion: Completion,
    errorText: string | null,
    channel: string,
    inTransaction: boolean,
  ): Promise<Completed | undefined>;
  readonly renew: FencedStatement;
  readonly startStep: FencedStatement;
  readonly finishStep: FencedStatement;
  readonly conflict: string;
  readonly findJob: string;
  /** The partitioned layout's maintenance (it purges by dropping partitions); undefined for the others. */
  readonly maintain: string | undefined;
  /** Whether the purge goes shard by shard (Citus, see purge.ts). */
  readonly distributed: boolean;
}

/**
 * Runs a fenced write in the row's partition when it can, else by key. The partition finding nothing is no
 * verdict: the row may have left it (an operator who moved its expiry by hand), so the key decides, at the cost
 * of a second statement only when the write is refused or the row moved.
 */
export function writeFenced<R>(
  client: Queryable,
  statement: FencedStatement,
  params: unknown[],
  fence: RunFence,
): Promise<R[]> {
  if (statement.inPartition !== undefined && fence.partitionKey !== undefined) {
    return writeInPartitionFirst(client, statement.inPartition, statement.byKey, params, fence.partitionKey);
  }
  // Not an async frame around the one statement: a completion is on every first execution's path.
  return client.query<R>(statement.byKey, params).then(rowsOf);
}

const rowsOf = <R>(result: { rows: R[] }): R[] => result.rows;

async function writeInPartitionFirst<R>(
  client: Queryable,
  inPartition: string,
  byKey: string,
  params: unknown[],
  partitionKey: unknown,
): Promise<R[]> {
  const { rows } = await client.query<R>(inPartition, [...params, partitionKey]);
  if (rows.length > 0) return rows;
  return (await client.query<R>(byKey, params)).rows;
}

/**
 * The statements of `schema` in its layout: picked here, once. `plansEveryStatement` is the driver's (see
 * `Driver`): the table layout then sends its first execution's server functions.
 */
export function layoutStatements(
  schema: string,
  layout: Layout,
  distributed: boolean,
  plansEveryStatement: () => boolean,
): LayoutStatements {
  if (distributed) return citusLayout(schema);
  return layout === 'partitioned' ? partitionedLayout(schema) : tableLayout(schema, plansEveryStatement);
}

/** A fenced write by key alone, or also in the row's partition (`scope: 'partition'`). */
function fencedOf(
  schema: string,
  partitioned: boolean,
  build: (schema: string, scope: FenceScope) => string,
): FencedStatement {
  return { byKey: build(schema, 'key'), inPartition: partitioned ? build(schema, 'partition') : undefined };
}

/** The writes after a claim that every layout sends alike (Citus replaces `finishStep`). */
function fencedWrites(schema: string, partitioned: boolean) {
  const fenced = (build: (schema: string, scope: FenceScope) => string) =>
    fencedOf(schema, partitioned, build);
  return {
    renew: fenced(renewLeaseSql),
    startStep: fenced(startStepSql),
    finishStep: fenced(finishStepSql),
    conflict: recordConflictSql(schema),
    findJob: findJobSql(schema),
  };
}

/** The one-statement completion of the table and partitioned layouts (`completeSql`), which notifies itself. */
function completeFenced(
  db: Queryable,
  statement: FencedStatement,
  completion: Completion,
  errorText: string | null,
  channel: string,
): Promise<Completed | undefined> {
  return writeFenced<Completed>(
    db,
    statement,
    completionParams(completion, errorText, channel),
    completion,
  ).then(firstOf);
}

const firstOf = <R>(rows: R[]): R | undefined => rows[0];

/** A first execution's insert and completion in the table layout, sent one of two ways (see `tableLayout`). */
interface FirstExecution {
  /** The new run's id, or undefined when the key exists. */
  insert(db: Queryable, request: ClaimFields): Promise<string | undefined>;
  complete(
    db: Queryable,
    completion: Completion,
    errorText: string | null,
    channel: string,
  ): Promise<Completed | undefined>;
}

/** The statements themselves, for a driver that names them (Postgres plans each once per connection). */
function firstExecutionStatements(schema: string): FirstExecution {
  const insert = insertRunSql(schema);
  const completion = fencedOf(schema, false, completeSql);
  return {
    insert: (db, request) => db.query<{ id: string }>(insert, insertRunParams(request)).then(insertedId),
    complete: (db, done, errorText, channel) => completeFenced(db, completion, done, errorText, channel),
  };
}

const insertedId = (result: { rows: { id: string }[] }): string | undefined => result.rows[0]?.id;

/** Migration 14's scalar server functions, for a driver whose statements are planned on every call. */
function firstExecutionFunctions(schema: string): FirstExecution {
  const insert = insertRunIdCallSql(schema);
  const completion = completeTimesCallSql(schema);
  return {
    insert: (db, request) =>
      db
        .query<{ id: string | null }>(insert, insertRunParams(request))
        .then(({ rows }) => rows[0]?.id ?? undefined),
    complete: (db, done, errorText, channel) =>
      db
        .query<{ times: number[] | null }>(completion, completionParams(done, errorText, channel))
        .then(({ rows }) => completedFromTimes(rows[0]?.times)),
  };
}

/** The claim statement's rows, and what they say of the key for `path` unless the insert already told it. */
async function claimRows(
  db: Queryable,
  path: ClaimPath,
  text: string,
  request: ClaimFields,
  pathTold: boolean,
): Promise<ClaimStep> {
  const { rows } = await db.query<Record<string, unknown>>(text, claimParams(request));
  if (!pathTold && rows[0]) path.found(rows[0].claim !== 'inserted');
  return { kind: 'row', rows };
}

/**
 * One table with a unique key: a fresh key is best served by the bare insert, an existing one by the claim. The
 * insert and the completion go through their server functions when the driver's statements are planned on every
 * call (sql/server-functions.ts); the claim of an existing key stays a statement, as replays seldom reach it.
 */
function tableLayout(schema: string, plansEveryStatement: () => boolean): LayoutStatements {
  const writes = fencedWrites(schema, false);
  const statements = firstExecutionStatements(schema);
  const functions = firstExecutionFunctions(schema);
  const hotPath = () => (plansEveryStatement() ? functions : statements);
  const claim = claimSql(schema);
  return Object.freeze({
    ...writes,
    maintain: undefined,
    distributed: false,
    // Not an async frame: the insert's answer decides in one `then` (a first execution's usual path).
    claim(db: Queryable, path: ClaimPath, request: ClaimFields): Promise<ClaimStep> {
      if (!path.insertFirst) return claimRows(db, path, claim, request, false);
      return hotPath()
        .insert(db, request)
        .then((id): ClaimStep | Promise<ClaimStep> => {
          path.found(id === undefined);
          return id !== undefined ? { kind: 'fresh', id } : claimRows(db, path, claim, request, true);
        });
    },
    complete: (db: Queryable, completion: Completion, errorText: string | null, channel: string) =>
      hotPath().complete(db, completion, errorText, channel),
  });
}

/**
 * Range partitions by expiry: no unique key index for the bare insert's `ON CONFLICT`, so every claim goes through
 * its claim function; fenced writes try the row's partition first; the purge drops partitions (`maintain`).
 */
function partitionedLayout(schema: string): LayoutStatements {
  const writes = fencedWrites(schema, true);
  const completion = fencedOf(schema, true, completeSql);
  const claim = partitionedClaimSql(schema);
  return Object.freeze({
    ...writes,
    maintain: maintainSql(schema),
    distributed: false,
    claim: (db: Queryable, path: ClaimPath, request: ClaimFields) =>
      claimRows(db, path, claim, request, false),
    complete: (db: Queryable, completion_: Completion, errorText: string | null, channel: string) =>
      completeFenced(db, completion, completion_, errorText, channel),
  });
}

/**
 * Distributed by tenant with Citus (citus-store.ts): a claim in steps that Citus routes, a completion that sends
 * the notice itself, a step's end that reads the clock once, and a purge shard by shard.
 */
function citusLayout(schema: string): LayoutStatements {
  const writes = fencedWrites(schema, false);
  const citus = citusStatements(schema);
  return Object.freeze({
    ...writes,
    finishStep: { byKey: citusFinishStepSql(schema), inPartition: undefined },
    maintain: undefined,
    distributed: true,
    claim: (db: Queryable, path: ClaimPath, request: ClaimFields) => claimInSteps(db, citus, path, request),
    complete: (
      db: Queryable,
      completion: Completion,
      errorText: string | null,
      channel: string,
      inTransaction: boolean,
    ) =>
      completeOnCitus(
        db,
        citus,
        [...fenceParams(completion), completion.status, completion.final, completion.resultJson, errorText],
        completion.ttlSeconds,
        channel,
        inTransaction,
      ),
  });
}
