import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ToolLedgerError } from '../contract/errors.js';
import type { LedgerOperation } from '../contract/observer.js';
import type { Queryable, StoredError } from '../contract/types.js';
import { citusFinishStepSql } from './citus-sql.js';
import { citusStatements, claimInSteps, completeOnCitus, type RunStatement } from './citus-store.js';
import { ClaimPath } from './claim-path.js';
import type { Driver } from './driver.js';
import { classifyDriverError, ledgerUnavailable } from './errors.js';
import type { Layout } from './partitioned.js';
import { maintainSql, partitionedClaimSql } from './partitioned-sql.js';
import { purgeBatch, startPurge } from './purge.js';
import { PURGE_WINDOW_BLOCKS, type PurgeSweep } from './purge-sweep.js';
import { cacheKey, ResultCache, type ResultCacheLimits } from './result-cache.js';
import type { ClaimRow, RunKey, RunRow, RunStatus } from './run-row.js';
import {
  type ClaimFields,
  claimExistingSql,
  claimParams,
  claimSql,
  completeSql,
  type FenceScope,
  findJobSql,
  finishStepSql,
  insertRunParams,
  insertRunSql,
  recordConflictSql,
  renewLeaseSql,
  startStepSql,
} from './sql.js';

export type OperationTimer = (operation: LedgerOperation, seconds: number) => void;

/** What a claim sends, by name (see `ClaimFields`). */
export type ClaimRequest = ClaimFields;

export interface Completion extends RunFence {
  readonly status: Exclude<RunStatus, 'in_progress'>;
  readonly final: boolean;
  /** Already JSON text. */
  readonly resultJson: string | null;
  readonly error: StoredError | null;
  readonly ttlSeconds: number;
}

// Both pg and PGlite return int4 as number, timestamptz as Date and json parsed, so rows need no conversion.
function asRow<T extends RunRow>(raw: Record<string, unknown>): T {
  return raw as unknown as T;
}

/**
 * The statements of one schema, built once per ledger. The partitioned layout has no unique key index for the
 * bare insert's `ON CONFLICT`: every claim goes through its claim function, and its purge drops partitions. A
 * schema distributed with Citus (read from its settings at start) gets the variants of citus-sql.ts: a claim that
 * only finds (the insert is its own statement), a completion that leaves the notice to the store, and a purge by
 * shard.
 */
function statements(schema: string, layout: Layout, distributed: boolean) {
  const partitioned = layout === 'partitioned';
  const fenced = (build: (schema: string, scope: FenceScope) => string): FencedStatement => ({
    byKey: build(schema, 'key'),
    inPartition: partitioned ? build(schema, 'partition') : undefined,
  });
  const byKey = (text: string): FencedStatement => ({ byKey: text, inPartition: undefined });
  return Object.freeze({
    claim: partitioned
      ? partitionedClaimSql(schema)
      : distributed
        ? claimExistingSql(schema)
        : claimSql(schema),
    /** Citus's claim and completion (citus-store.ts), instead of `claim` and `complete`. */
    citus: distributed ? citusStatements(schema) : undefined,
    insert: partitioned ? undefined : insertRunSql(schema),
    maintain: partitioned ? maintainSql(schema) : undefined,
    complete: fenced(completeSql),
    renew: fenced(renewLeaseSql),
    conflict: recordConflictSql(schema),
    findJob: findJobSql(schema),
    startStep: fenced(startStepSql),
    finishStep: distributed ? byKey(citusFinishStepSql(schema)) : fenced(finishStepSql),
    /** Purged shard by shard (purge.ts). */
    distributed,
  });
}

/**
 * A fenced write, by key; in the partitioned layout also in the claimed row's partition only, which is tried first
 * (see `FenceScope` in sql.ts).
 */
interface FencedStatement {
  readonly byKey: string;
  readonly inPartition: string | undefined;
}

/**
 * Runs a fenced write in the row's partition when it can, else by key. The partition finding nothing is no
 * verdict: the row may have left it (an operator who moved its expiry by hand), so the key decides, at the cost
 * of a second statement only when the write is refused or the row moved.
 */
async function writeFenced<R>(
  client: Queryable,
  statement: FencedStatement,
  params: unknown[],
  fence: RunFence,
): Promise<R[]> {
  if (statement.inPartition !== undefined && fence.partitionKey !== undefined) {
    const { rows } = await client.query<R>(statement.inPartition, [...params, fence.partitionKey]);
    if (rows.length > 0) return rows;
  }
  return (await client.query<R>(statement.byKey, params)).rows;
}

/**
 * Typed access to the ledger table. Every method is one statement (one round trip; a partitioned fenced write that
 * its partition refuses, two, see `writeFenced`), timed, with driver failures mapped to `LEDGER_UNAVAILABLE`.
 */
export class LedgerStore {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #sql: ReturnType<typeof statements>;
  readonly channel: string;
  readonly #cache: ResultCache;
  /** Claims this process won and has not completed yet (by run id), so a completion can fill the replay cache. */
  readonly #won = new Map<string, { readonly key: string; readonly row: ClaimRow }>();
  readonly #path = new ClaimPath();

  constructor(
    driver: Driver,
    schema: string,
    cache: ResultCacheLimits = { maxEntries: 0, maxBytes: 0 },
    layout: Layout = 'table',
    distributed = false,
  ) {
    this.#driver = driver;
    this.#schema = schema;
    this.#sql = statements(schema, layout, distributed);
    this.#cache = new ResultCache(cache);
    // A plain lowercase identifier: both pg and PGlite LISTEN it without quoting surprises.
    this.channel = `tool_ledger_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
  }

  get driver(): Driver {
    return this.#driver;
  }

  async #run<R>(
    client: Queryable,
    text: string,
    params: unknown[],
    doing: string,
    operation: LedgerOperation | undefined,
    timer: OperationTimer | undefined,
  ): Promise<R[]> {
    const started = performance.now();
    try {
      const { rows } = await client.query<Record<string, unknown>>(text, params);
      return rows as R[];
    } catch (error) {
      throw ledgerUnavailable(error, doing);
    } finally {
      if (operation && timer) timer(operation, (performance.now() - started) / 1000);
    }
  }

  async #runFenced<R>(
    client: Queryable,
    statement: FencedStatement,
    params: unknown[],
    fence: RunFence,
    doing: string,
  ): Promise<R[]> {
    try {
      return await writeFenced<R>(client, statement, params, fence);
    } catch (error) {
      throw ledgerUnavailable(error, doing);
    }
  }

  /** Whether the next claim tries the bare insert first (see `ClaimPath`), for tests and the bench. */
  get insertsFirst(): boolean {
    return this.#path.insertFirst;
  }

  /** The replay cache, for tests and the bench. */
  get cache(): ResultCache {
    return this.#cache;
  }

  /**
   * The claim: a completed row from the replay cache when this process saw it (no round trip), else the bare insert,
   * the full claim statement, or both in turn (see `ClaimPath`).
   */
  async claim(request: ClaimRequest, timer?: OperationTimer): Promise<ClaimRow | undefined> {
    // Built once per claim: the cache and the map of won claims look it up again, and V8 keeps its hash.
    const keyText = this.#cache.enabled ? cacheKey(request.tenant, request.tool, request.key) : '';
    const cached = keyText && this.#cache.replay(keyText, request.user ?? null, request.paramsHash, request);
    if (cached) return cached;
    const sentAt = performance.now();
    // One async frame for the whole claim, the driver awaited here: a frame per layer costs every call a promise.
    try {
      const citus = this.#sql.citus;
      if (citus !== undefined) {
        const step = await claimInSteps(this.#runClaim, citus, this.#path, request);
        return step.kind === 'fresh'
          ? this.#track(keyText, freshRun(step.id, request))
          : this.#settle(step.rows, request, keyText, sentAt);
      }
      const insertSql = this.#sql.insert;
      const triedInsert = insertSql !== undefined && this.#path.insertFirst;
      if (triedInsert) {
        let inserted: Array<{ id: string }>;
        try {
          inserted = (await this.#driver.query<{ id: string }>(insertSql, insertRunParams(request))).rows;
        } catch (error) {
          throw ledgerUnavailable(error, 'claim the idempotency key');
        }
        this.#path.found(inserted.length === 0);
        if (inserted[0]) return this.#track(keyText, freshRun(inserted[0].id, request));
      }
      const rows = await this.#run<Record<string, unknown>>(
        this.#driver,
        this.#sql.claim,
        claimParams(request),
        'claim the idempotency key',
        undefined,
        undefined,
      );
      const row = this.#settle(rows, request, keyText, sentAt);
      if (!triedInsert && row) this.#path.found(row.claim !== 'inserted');
      return row;
    } finally {
      // One operation however many statements it took, so the histogram counts claims.
      timer?.('claim', (performance.now() - sentAt) / 1000);
    }
  }

  /**
   * The row a claim statement answered, as the caller gets it: with its key, which travels with it to the writes
   * that follow (the request is that key already, not a copy), remembered for replays when it is another's, and
   * tracked until its completion when this claim won it.
   */
  #settle(
    rows: Record<string, unknown>[],
    request: ClaimRequest,
    keyText: string,
    sentAt: number,
  ): ClaimRow | undefined {
    if (!rows[0]) return undefined;
    rows[0].runKey = request;
    const row = asRow<ClaimRow>(rows[0]);
    if (row.claim !== 'existing') return this.#track(keyText, row);
    if (this.#cache.enabled) this.#cache.remember(keyText, row, sentAt);
    return row;
  }

  /** One statement of Citus's claim (`claimInSteps`), its failures mapped as every claim's. */
  readonly #runClaim: RunStatement = (text, params) =>
    this.#run(this.#driver, text, params, 'claim the idempotency key', undefined, undefined);

  /** Keeps a run this process won until its completion, which fills the replay cache from it. */
  #track(keyText: string, row: ClaimRow): ClaimRow {
    if (!this.#cache.enabled) return row;
    this.#won.set(row.id, { key: keyText, row });
    // Bounded like the cache: a claim whose completion never comes (a crash of its handler's save) ages out.
    if (this.#won.size > this.#cache.maxEntries) this.#won.delete(this.#won.keys().next().value!);
    return row;
  }

  /** Returns the completion time, or undefined when the fence refused the write (the lease was lost). */
  async complete(
    completion: Completion,
    timer?: OperationTimer,
    client?: Queryable,
  ): Promise<Date | undefined> {
    const sentAt = performance.now();
    const won = this.#won.get(completion.id);
    this.#won.delete(completion.id);
    const errorText = completion.error === null ? null : JSON.stringify(completion.error);
    let done: { completed_at_ms: number; expires_in_ms: number } | undefined;
    try {
      const citus = this.#sql.citus;
      if (citus !== undefined) {
        const params = [
          ...fenceParams(completion),
          completion.status,
          completion.final,
          completion.resultJson,
          errorText,
        ];
        const db = client ?? this.#driver;
        done = await completeOnCitus(
          db,
          citus,
          params,
          completion.ttlSeconds,
          this.channel,
          client !== undefined,
        );
      } else {
        const rows = await writeFenced<{ completed_at_ms: number; expires_in_ms: number }>(
          client ?? this.#driver,
          this.#sql.complete,
          [
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
            this.channel,
          ],
          completion,
        );
        done = rows[0];
      }
    } catch (error) {
      throw ledgerUnavailable(error, 'record the result');
    } finally {
      timer?.('complete', (performance.now() - sentAt) / 1000);
    }
    const completedAt = done ? new Date(done.completed_at_ms) : undefined;
    // Inside a transaction the row is not committed yet, and may never be: only an autocommit completion is cached.
    if (done && completedAt && won && won.row.attempt === completion.attempt && client === undefined) {
      this.#cache.remember(won.key, won.row, sentAt, {
        status: completion.status,
        final: completion.final,
        completedAt,
        expiresInMs: done.expires_in_ms,
        resultText: completion.resultJson,
        errorText,
      });
    }
    return completedAt;
  }

  /**
   * True while the lease is still ours. Runs on the driver's reserved connection, so a pool full of the very work
   * this lease protects cannot make it lapse.
   */
  async renewLease(fence: RunFence, leaseSeconds: number): Promise<boolean> {
    const rows = await this.#runFenced(
      this.#driver.reserved,
      this.#sql.renew,
      [...fenceParams(fence), leaseSeconds],
      fence,
      'renew the lease',
    );
    return rows.length > 0;
  }

  /**
   * Marks a step started under the run's fence. Returns the run's step token, or undefined when the fence refused
   * (the lease was lost to another caller).
   */
  async startStep(fence: RunFence, name: string, newToken: string): Promise<string | undefined> {
    const rows = await this.#runFenced<{ step_token: string }>(
      this.#driver,
      this.#sql.startStep,
      [...fenceParams(fence), name, newToken],
      fence,
      'record that a step started',
    );
    return rows[0]?.step_token;
  }

  /** Records a step's end under the run's fence. False when the fence refused. */
  async finishStep(
    fence: RunFence,
    name: string,
    status: 'succeeded' | 'failed',
    resultJson: string | null,
    error: StoredError | null,
  ): Promise<boolean> {
    const rows = await this.#runFenced(
      this.#driver,
      this.#sql.finishStep,
      [...fenceParams(fence), name, status, resultJson, error === null ? null : JSON.stringify(error)],
      fence,
      'record a step result',
    );
    return rows.length > 0;
  }

  async recordConflict(runKey: RunKey): Promise<void> {
    await this.#run(
      this.#driver,
      this.#sql.conflict,
      [runKey.tenant, runKey.tool, runKey.key],
      'record the conflict',
      undefined,
      undefined,
    );
  }

  async findJob(
    tenant: string,
    tool: string,
    jobId: string,
    timer?: OperationTimer,
  ): Promise<RunRow | undefined> {
    const rows = await this.#run<Record<string, unknown>>(
      this.#driver,
      this.#sql.findJob,
      [tenant, tool, jobId],
      'look up the job',
      'lookup',
      timer,
    );
    return rows[0] ? asRow<RunRow>(rows[0]) : undefined;
  }

  /** Whether this store's purge drops partitions (`maintain`) instead of deleting batches. */
  get partitioned(): boolean {
    return this.#sql.maintain !== undefined;
  }

  /**
   * The partitioned layout's maintenance: makes the partitions for the next `aheadSeconds` and drops those that
   * ended `graceSeconds` ago and hold no live lease. One row per partition touched.
   */
  async maintain(
    aheadSeconds: number,
    graceSeconds: number,
  ): Promise<Array<{ action: string; partition_name: string; row_count: string }>> {
    const text = this.#sql.maintain;
    if (text === undefined) throw new Error('maintain() needs the partitioned layout');
    return this.#run(
      this.#driver,
      text,
      [aheadSeconds, graceSeconds],
      'maintain the partitions',
      undefined,
      undefined,
    );
  }

  /** Where a purge starts: a sweep of the heap as it is now, in windows of `windowBlocks` (see purge-sweep.ts). */
  async startPurge(windowBlocks?: number): Promise<PurgeSweep> {
    try {
      return await startPurge(this.#driver, this.#schema, windowBlocks, this.#sql.distributed);
    } catch (error) {
      throw ledgerUnavailable(error, 'start a purge');
    }
  }

  /** Deletes one batch of the sweep; returns how many rows went and where the sweep goes on. */
  async purgeBatch(
    batchSize: number,
    sweep: PurgeSweep,
  ): Promise<{ readonly deleted: number; readonly next: PurgeSweep }> {
    try {
      return await purgeBatch(this.#driver, this.#schema, batchSize, sweep);
    } catch (error) {
      if (classifyDriverError(error).condition === 'query_canceled')
        throw purgeBatchCanceled(error, batchSize);
      throw ledgerUnavailable(error, 'purge expired rows');
    }
  }
}

/**
 * A purge batch `statement_timeout` canceled. A window batch reads at most `PURGE_WINDOW_BLOCKS` and deletes at most
 * `batchSize` rows, so a lock is the likely cause, not the backlog (see purge-sweep.ts); PostgreSQL 13's batches
 * read the whole table.
 */
function purgeBatchCanceled(error: unknown, batchSize: number): ToolLedgerError {
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `A purge batch of ${batchSize} rows ran past statementTimeoutSeconds and was canceled; it rolled back, and the batches before it stay purged. A batch reads at most ${(PURGE_WINDOW_BLOCKS * 8) / 1024} MB of the table and deletes at most ${batchSize} rows, so it most likely waited on a lock another session holds on the ledger table: find it in pg_locks, then call purgeExpired() again. If the server is only slow, pass a smaller batchSize or raise statementTimeoutSeconds. On PostgreSQL 13 a batch can read the whole table: upgrade to 14 or later, or use layout: 'partitioned'.`,
    { cause: error, retryable: true },
  );
}

/** Which attempt of which run, under whose lease: the fence every write of a running execution carries. */
export interface RunFence {
  /** The run's id: this process's handle on it (waits, held saves); the database finds the row by `runKey`. */
  readonly id: string;
  readonly runKey: RunKey;
  readonly attempt: number;
  readonly leaseOwner: string;
  /** The partitioned layout's: the partition key the claim read (see `FenceScope` in sql.ts). */
  readonly partitionKey?: string | undefined;
}

/** The fence of the attempt a claim won. */
export function fenceOf(row: ClaimRow): RunFence {
  return {
    id: row.id,
    runKey: row.runKey,
    attempt: row.attempt,
    leaseOwner: row.lease_owner!,
    partitionKey: row.partition_key,
  };
}

/** The fence's $1 to $5 of every fenced statement (see `KEY_FENCE` in sql.ts). */
function fenceParams(fence: RunFence): unknown[] {
  return [fence.runKey.tenant, fence.runKey.tool, fence.runKey.key, fence.attempt, fence.leaseOwner];
}

/** The row the insert wrote, as the full claim would have returned it: the caller sent every column but the id. */
function freshRun(id: string, request: ClaimRequest): ClaimRow {
  return {
    claim: 'inserted',
    runKey: request,
    id,
    user_id: request.user ?? null,
    parameter_hash: request.paramsHash,
    status: 'in_progress',
    final: false,
    attempt: 1,
    lease_owner: request.leaseOwner,
    lease_remaining_ms: request.leaseSeconds * 1000,
    result_json: null,
    error_json: null,
    job_id: request.jobId ?? null,
    trace_id: request.traceId ?? null,
    span_id: request.spanId ?? null,
    completed_at: null,
    expires_in_ms: request.ttlSeconds * 1000,
    lease_live: true,
    takeover_due: false,
    waiting: false,
    steps: null,
    step_token: null,
    lapsed: false,
  };
}

/**
 * A lease owner names the worker for support (`host:pid`) plus a part that keeps every claim's fencing token
 * unique: 96 random bits drawn once per process (so also across restarts that reuse a pid) and a counter, which
 * costs a claim nothing, where a random UUID per claim cost about 2 µs.
 */
export function newLeaseOwner(): string {
  claimsOwned++;
  return `${WORKER}:${claimsOwned.toString(36)}`;
}

// Read once: `hostname()` is a system call.
const WORKER = `${hostname()}:${process.pid}:${randomBytes(12).toString('base64url')}`;
let claimsOwned = 0;
