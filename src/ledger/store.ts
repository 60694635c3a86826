import { createHash, randomUUID } from 'node:crypto';
import type { LedgerOperation } from '../contract/observer.js';
import type { Queryable, StoredError } from '../contract/types.js';
import type { Driver } from './driver.js';
import { ledgerUnavailable } from './errors.js';
import type { ClaimRow, RunRow, RunStatus } from './run-row.js';
import {
  claimSql,
  completeSql,
  findJobSql,
  purgeExpiredBatchSql,
  recordConflictSql,
  renewLeaseSql,
} from './sql.js';

export type OperationTimer = (operation: LedgerOperation, seconds: number) => void;

export interface ClaimRequest {
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
  readonly jobId: string | undefined;
  readonly allowLeaseTakeover: boolean;
  /** Register as waiting when the run is in flight, so its completion notifies (only then). */
  readonly wouldWait: boolean;
}

export interface Completion {
  readonly id: string;
  readonly attempt: number;
  readonly leaseOwner: string;
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

/** The statements of one schema, built once per ledger. */
function statements(schema: string) {
  return Object.freeze({
    claim: claimSql(schema),
    complete: completeSql(schema),
    renew: renewLeaseSql(schema),
    conflict: recordConflictSql(schema),
    findJob: findJobSql(schema),
    purge: purgeExpiredBatchSql(schema),
  });
}

/**
 * Typed access to the ledger table. Every method is one statement (one round trip), timed, with driver failures
 * mapped to `LEDGER_UNAVAILABLE`.
 */
export class LedgerStore {
  readonly #driver: Driver;
  readonly #sql: ReturnType<typeof statements>;
  readonly channel: string;

  constructor(driver: Driver, schema: string) {
    this.#driver = driver;
    this.#sql = statements(schema);
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

  async claim(request: ClaimRequest, timer?: OperationTimer): Promise<ClaimRow | undefined> {
    const rows = await this.#run<Record<string, unknown>>(
      this.#driver,
      this.#sql.claim,
      [
        request.tenant,
        request.tool,
        request.key,
        request.user ?? null,
        request.paramsHash,
        request.leaseOwner,
        request.leaseSeconds,
        request.ttlSeconds,
        request.traceId ?? null,
        request.spanId ?? null,
        request.jobId ?? null,
        request.allowLeaseTakeover,
        request.wouldWait,
      ],
      'claim the idempotency key',
      'claim',
      timer,
    );
    const row = rows[0];
    return row ? asRow<ClaimRow>(row) : undefined;
  }

  /** Returns the completion time, or undefined when the fence refused the write (the lease was lost). */
  async complete(
    completion: Completion,
    timer?: OperationTimer,
    client?: Queryable,
  ): Promise<Date | undefined> {
    const rows = await this.#run<{ completed_at: Date }>(
      client ?? this.#driver,
      this.#sql.complete,
      [
        completion.id,
        completion.attempt,
        completion.leaseOwner,
        completion.status,
        completion.final,
        completion.resultJson,
        completion.error === null ? null : JSON.stringify(completion.error),
        completion.ttlSeconds,
        this.channel,
      ],
      'record the result',
      'complete',
      timer,
    );
    return rows[0]?.completed_at;
  }

  /**
   * True while the lease is still ours. Runs on the driver's reserved connection, so a pool full of the very work
   * this lease protects cannot make it lapse.
   */
  async renewLease(id: string, attempt: number, owner: string, leaseSeconds: number): Promise<boolean> {
    const rows = await this.#run(
      this.#driver.reserved,
      this.#sql.renew,
      [id, attempt, owner, leaseSeconds],
      'renew the lease',
      undefined,
      undefined,
    );
    return rows.length > 0;
  }

  async recordConflict(id: string): Promise<void> {
    await this.#run(this.#driver, this.#sql.conflict, [id], 'record the conflict', undefined, undefined);
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

  /** Deletes one batch; returns how many rows went. */
  async purgeBatch(batchSize: number): Promise<number> {
    try {
      const result = (await this.#driver.query(this.#sql.purge, [batchSize])) as {
        rows: unknown[];
        rowCount?: number | null;
        affectedRows?: number;
      };
      return Number(result.rowCount ?? result.affectedRows ?? 0);
    } catch (error) {
      throw ledgerUnavailable(error, 'purge expired rows');
    }
  }
}

export function newLeaseOwner(): string {
  return randomUUID();
}
