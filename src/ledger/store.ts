import { createHash } from 'node:crypto';
import { ToolLedgerError } from '../contract/errors.js';
import type { LedgerOperation } from '../contract/observer.js';
import type { Queryable, StoredError } from '../contract/types.js';
import { ClaimPath } from './claim-path.js';
import type { Driver } from './driver.js';
import { classifyDriverError, ledgerUnavailable } from './driver-errors.js';
import { type Completion, fenceParams, type RunFence } from './fence.js';
import { type FencedStatement, type LayoutStatements, layoutStatements, writeFenced } from './layouts.js';
import type { Layout } from './partitioned.js';
import { purgeBatch, startPurge } from './purge.js';
import { PURGE_WINDOW_BLOCKS, type PurgeSweep } from './purge-sweep.js';
import { type ClaimedRun, ResultCache, type ResultCacheLimits } from './result-cache.js';
import type { ClaimRow, ClaimStep, Completed, RunKey, RunRow } from './run-row.js';
import type { ClaimFields } from './sql/claim-fields.js';

export type OperationTimer = (operation: LedgerOperation, seconds: number) => void;

/** A timed operation, and what its `LEDGER_UNAVAILABLE` says it could not do. */
interface FailedOperation {
  readonly operation: LedgerOperation;
  readonly doing: string;
}

const CLAIM_FAILED: FailedOperation = { operation: 'claim', doing: 'claim the idempotency key' };
const COMPLETION_FAILED: FailedOperation = { operation: 'complete', doing: 'record the result' };

/** What a claim sends, by name (see `ClaimFields`). */
export type ClaimRequest = ClaimFields;

// Both pg and PGlite return int4 as number, timestamptz as Date and json parsed, so rows need no conversion.
function asRow<T extends RunRow>(raw: Record<string, unknown>): T {
  return raw as unknown as T;
}

/**
 * Typed access to the ledger table. Every method is one statement (one round trip; a partitioned fenced write that
 * its partition refuses, two, see `writeFenced`), timed, with driver failures mapped to `LEDGER_UNAVAILABLE`.
 */
export class LedgerStore {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #sql: LayoutStatements;
  readonly channel: string;
  readonly #cache: ResultCache;
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
    this.#sql = layoutStatements(schema, layout, distributed, () => this.#driver.plansEveryStatement());
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
  claim(request: ClaimRequest, timer?: OperationTimer): Promise<ClaimRow | undefined> {
    // Built once per claim: the cache and the map of claimed runs look it up again, and V8 keeps its hash.
    const keyText = this.#cache.keyOf(request);
    const cached = keyText && this.#cache.replay(keyText, request.user ?? null, request.paramsHash, request);
    if (cached) return Promise.resolve(cached);
    const sentAt = performance.now();
    // One `then` rather than an async frame and its await: every first execution claims. The statement's failure
    // and a failure reading its answer are mapped alike, and the claim is timed as one operation however many
    // statements it took, so the histogram counts claims.
    let sent: Promise<ClaimStep>;
    try {
      sent = this.#sql.claim(this.#driver, this.#path, request);
    } catch (error) {
      return Promise.reject(this.#failed(error, CLAIM_FAILED, sentAt, timer));
    }
    return sent.then(
      (step) => {
        let row: ClaimRow | undefined;
        try {
          row =
            step.kind === 'fresh'
              ? this.#cache.claimed(keyText, freshRun(step.id, request))
              : this.#settle(step.rows, request, keyText, sentAt);
        } catch (error) {
          throw this.#failed(error, CLAIM_FAILED, sentAt, timer);
        }
        timer?.('claim', (performance.now() - sentAt) / 1000);
        return row;
      },
      (error: unknown) => {
        throw this.#failed(error, CLAIM_FAILED, sentAt, timer);
      },
    );
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
    if (row.claim !== 'existing') return this.#cache.claimed(keyText, row);
    if (this.#cache.enabled) this.#cache.remember(keyText, row, sentAt);
    return row;
  }

  /**
   * Returns the completion time, or undefined when the fence refused the write (the lease was lost). One `then`
   * rather than an async frame and its await, as for the claim: every first execution completes.
   */
  complete(completion: Completion, timer?: OperationTimer, client?: Queryable): Promise<Date | undefined> {
    const sentAt = performance.now();
    let claimed: ClaimedRun | undefined;
    let errorText: string | null;
    let sent: Promise<Completed | undefined>;
    try {
      claimed = this.#cache.takeClaimed(completion.id);
      errorText = completion.error === null ? null : JSON.stringify(completion.error);
      sent = this.#sql.complete(
        client ?? this.#driver,
        completion,
        errorText,
        this.channel,
        client !== undefined,
      );
    } catch (error) {
      return Promise.reject(this.#failed(error, COMPLETION_FAILED, sentAt, timer));
    }
    return sent.then(
      (done) => {
        timer?.('complete', (performance.now() - sentAt) / 1000);
        if (!done) return undefined;
        const completedAt = new Date(done.completed_at_ms);
        // Inside a transaction the row is not committed yet, and may never be: only an autocommit completion is
        // cached.
        if (client === undefined) {
          this.#cache.completed(claimed, completion.attempt, sentAt, {
            status: completion.status,
            final: completion.final,
            completedAt,
            expiresInMs: done.expires_in_ms,
            resultText: completion.resultJson,
            errorText,
          });
        }
        return completedAt;
      },
      (error: unknown) => {
        throw this.#failed(error, COMPLETION_FAILED, sentAt, timer);
      },
    );
  }

  /** A claim or completion that failed: timed as its operation, and mapped to `LEDGER_UNAVAILABLE`. */
  #failed(
    error: unknown,
    { operation, doing }: FailedOperation,
    sentAt: number,
    timer: OperationTimer | undefined,
  ): ToolLedgerError {
    timer?.(operation, (performance.now() - sentAt) / 1000);
    return ledgerUnavailable(error, doing);
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
