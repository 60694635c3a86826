import type { Queryable, StoredError } from '../../contract/types.js';
import { type AuditEntry, appendAudit, auditKeyHash, type StoredAuditEntry } from '../audit/chain.js';
import type { Driver } from '../driver.js';
import { ledgerUnavailable } from '../driver-errors.js';
import type { RunFence } from '../fence.js';
import { ensurePartitionOfSql } from '../partitioned-sql.js';
import type { ClaimRow, RunKey } from '../run-row.js';
import { type ClaimFields, takeParams } from '../sql/claim-fields.js';
import {
  approvalStateSql,
  countAwaitingSql,
  decideSql,
  decisionLockSql,
  decisionRowSql,
  listAwaitingSql,
  parkSql,
  takeApprovedSql,
} from './sql.js';

/** What the `approval` column holds: the arguments awaiting a decision, then the decision merged in. */
export interface ApprovalRecord {
  readonly arguments?: unknown;
  readonly decision?: 'approved' | 'declined';
  readonly by?: string;
  /** ISO time of the decision. */
  readonly at?: string;
  readonly reason?: string | null;
  readonly fingerprint?: string;
  readonly approvedFingerprint?: string;
  readonly edited?: boolean;
  /** The approver's edit, which the handler runs with instead of the caller's arguments. */
  readonly approvedArguments?: unknown;
  /** The run the decision was taken on (see `createdAtText` in sql.ts). */
  readonly runCreatedAt?: string;
}

/** A key's row as approvals read it. */
export interface ApprovalState {
  readonly id: string;
  readonly status: string;
  readonly user_id: string | null;
  readonly parameter_hash: string;
  readonly attempt: number;
  readonly approval: ApprovalRecord | null;
  readonly deadline_ms: number | null;
  /** An `awaiting_approval` row past its deadline: expired. */
  readonly deadline_passed: boolean;
  /** Past its TTL: the key counts as new. */
  readonly ttl_over: boolean;
  /** The recorded decision was taken on this run (not on an earlier intent of the key, before its TTL). */
  readonly approval_current: boolean;
}

/** A row the next call took over after its approval: the claim's row, with the approval. */
export type ApprovedClaim = ClaimRow & { readonly approval: ApprovalRecord | null };

/**
 * What the taker of an approved row sends: the key, its own claim's fields (`ClaimFields`: user, fingerprint,
 * lease, TTL and trace, sent by `takeParams`) and the attempt it read.
 */
export interface TakeApproved {
  readonly runKey: RunKey;
  readonly fields: ClaimFields;
  readonly attempt: number;
}

/** One row of the inbox. */
export interface AwaitingRow {
  readonly tenant_id: string;
  readonly tool_name: string;
  readonly idempotency_key: string;
  readonly user_id: string | null;
  readonly parameter_hash: string;
  readonly id: string;
  readonly arguments: unknown;
  readonly requested_ms: number;
  readonly deadline_ms: number;
}

/** A decision as the transaction is asked to record it, once `judge` accepted the row. */
export interface DecisionWrite {
  readonly status: 'approved' | 'declined';
  /** Merged into `approval`; `at` and `runCreatedAt` are filled in here. */
  readonly record: Omit<ApprovalRecord, 'at' | 'runCreatedAt' | 'arguments'>;
  readonly storedError: StoredError | null;
  readonly ttlSeconds: number;
  readonly audit: Omit<AuditEntry, 'at' | 'keyHash' | 'runId' | 'tenant' | 'tool'>;
}

/** What a decision's transaction found: the row as locked (or none), and what it did. */
export type DecisionResult =
  | { readonly kind: 'no_run' }
  | { readonly kind: 'refused'; readonly row: ApprovalState }
  | {
      readonly kind: 'decided';
      readonly row: ApprovalState;
      readonly at: Date;
      readonly entry: StoredAuditEntry;
    };

/**
 * The statements of approvals over one schema (ledger/approvals/sql.ts), each timed out and mapped like the
 * store's: a driver failure is `LEDGER_UNAVAILABLE`. None runs for a tool without `approval`.
 */
export class ApprovalStore {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #channel: string;
  readonly #sql: ReturnType<typeof statements>;
  readonly #partitioned: boolean;

  /**
   * `partitioned`: the ledger table is range-partitioned by expiry (`layout: 'partitioned'`). There, an update that
   * changes a row's expiry moves it to another partition, and a concurrent writer of the moved row gets a
   * serialization failure instead of the row as it now is. So the writes of approvals that move a row (the park,
   * the approved row's takeover) run in a transaction under the key's advisory lock, as the layout's claim function
   * and every decision do: writers of one key take turns, and each reads what the previous one committed.
   */
  constructor(driver: Driver, schema: string, channel: string, partitioned = false) {
    this.#driver = driver;
    this.#schema = schema;
    this.#channel = channel;
    this.#sql = statements(schema);
    this.#partitioned = partitioned;
  }

  /** Runs `write` alone on its connection, or, on the partitioned layout, in a transaction under the key's lock. */
  async #moving<R>(runKey: RunKey, doing: string, write: (db: Queryable) => Promise<R>): Promise<R> {
    if (!this.#partitioned) return write(this.#driver);
    try {
      return await this.#driver.transaction(async (tx) => {
        await tx.query(this.#sql.lock, [runKey.tenant, runKey.tool, runKey.key]);
        return write(tx);
      });
    } catch (error) {
      throw ledgerUnavailable(error, doing);
    }
  }

  async #query<R>(db: Queryable, text: string, params: unknown[], doing: string): Promise<R[]> {
    try {
      return (await db.query<R>(text, params)).rows;
    } catch (error) {
      throw ledgerUnavailable(error, doing);
    }
  }

  /**
   * Turns the run this call claimed into one awaiting approval (under its fence). Returns the deadline, or
   * undefined when the fence refused (the lease was lost to another caller).
   */
  async park(
    fence: RunFence,
    approvalTtlSeconds: number,
    ttlSeconds: number,
    argumentsJson: string,
  ): Promise<Date | undefined> {
    const { tenant, tool, key } = fence.runKey;
    const doing = 'save the call awaiting approval';
    const rows = await this.#moving(fence.runKey, doing, async (db) => {
      // The parked row's expiry (deadline, then TTL) is likely past what maintenance keeps ahead.
      if (this.#partitioned) {
        await this.#query(db, this.#sql.partitionOf, [approvalTtlSeconds + ttlSeconds], doing);
      }
      return this.#query<{ deadline_ms: number }>(
        db,
        this.#sql.park,
        [
          tenant,
          tool,
          key,
          fence.attempt,
          fence.leaseOwner,
          approvalTtlSeconds,
          ttlSeconds,
          argumentsJson,
          this.#channel,
        ],
        doing,
      );
    });
    return rows[0] ? new Date(Number(rows[0].deadline_ms)) : undefined;
  }

  /** The key's approval state, or undefined when it has no row. */
  async state(runKey: RunKey): Promise<ApprovalState | undefined> {
    const rows = await this.#query<ApprovalState>(
      this.#driver,
      this.#sql.state,
      [runKey.tenant, runKey.tool, runKey.key],
      'read the approval',
    );
    return rows[0];
  }

  /** Takes an approved row over for this caller; undefined when it is no longer approved as read. */
  async takeApproved(take: TakeApproved): Promise<ApprovedClaim | undefined> {
    const doing = 'take over the approved call';
    const rows = await this.#moving(take.runKey, doing, (db) =>
      this.#query<Record<string, unknown>>(db, this.#sql.take, takeParams(take.fields, take.attempt), doing),
    );
    if (!rows[0]) return undefined;
    rows[0].runKey = take.runKey;
    return rows[0] as unknown as ApprovedClaim;
  }

  /**
   * One decision, in one transaction: the key's lock, the row locked and handed to `judge` with the transaction's
   * time (which answers the
   * write, or undefined to refuse: the caller reads why from the row), the row updated, the audit entry appended,
   * and the waiters woken at commit.
   */
  async decide(
    runKey: RunKey,
    judge: (row: ApprovalState, at: Date) => DecisionWrite | undefined,
  ): Promise<DecisionResult> {
    const { tenant, tool, key } = runKey;
    try {
      // Before the transaction: it may make the secret, which must not roll back with a refused decision.
      const keyHash = await auditKeyHash(this.#driver, this.#schema, key);
      return await this.#driver.transaction(async (tx): Promise<DecisionResult> => {
        await tx.query(this.#sql.lock, [tenant, tool, key]);
        const { rows } = await tx.query<ApprovalState & { created_at_text: string; now_ms: number }>(
          this.#sql.row,
          [tenant, tool, key],
        );
        const row = rows[0];
        if (!row) return { kind: 'no_run' };
        const at = new Date(Number(row.now_ms));
        const write = judge(row, at);
        if (!write) return { kind: 'refused', row };
        const record = { ...write.record, at: at.toISOString(), runCreatedAt: row.created_at_text };
        await tx.query(this.#sql.decide, [
          tenant,
          tool,
          key,
          write.status,
          JSON.stringify(record),
          write.storedError === null ? null : JSON.stringify(write.storedError),
          write.ttlSeconds,
          this.#channel,
        ]);
        const entry = await appendAudit(tx, this.#schema, {
          ...write.audit,
          tenant,
          tool,
          at,
          keyHash,
          runId: row.id,
        });
        return { kind: 'decided', row, at, entry };
      });
    } catch (error) {
      throw ledgerUnavailable(error, 'record the decision');
    }
  }

  /** Calls awaiting a decision, oldest first. */
  list(tenant: string | undefined, tool: string | undefined, limit: number): Promise<AwaitingRow[]> {
    return this.#query<AwaitingRow>(
      this.#driver,
      this.#sql.list,
      [tenant ?? null, tool ?? null, limit],
      'list the calls awaiting approval',
    );
  }

  /**
   * How many calls await a decision, and for how long the oldest has, by tenant for `tenants` and as one group
   * (tenant undefined) for the others. The group of the others is always there, 0 when none waits.
   */
  async countAwaiting(tenants: readonly string[]): Promise<AwaitingCount[]> {
    const rows = await this.#query<{ tenant: string | null; waiting: number; oldest_seconds: number }>(
      this.#driver,
      this.#sql.count,
      [[...tenants]],
      'count the calls awaiting approval',
    );
    const counts = rows.map((r) => ({
      tenant: r.tenant ?? undefined,
      waiting: Number(r.waiting),
      oldestSeconds: Number(r.oldest_seconds),
    }));
    if (!counts.some((c) => c.tenant === undefined))
      counts.push({ tenant: undefined, waiting: 0, oldestSeconds: 0 });
    return counts;
  }
}

/** One group of `countAwaiting`. */
export interface AwaitingCount {
  readonly tenant: string | undefined;
  readonly waiting: number;
  readonly oldestSeconds: number;
}

function statements(schema: string) {
  return Object.freeze({
    park: parkSql(schema),
    partitionOf: ensurePartitionOfSql(schema),
    state: approvalStateSql(schema),
    take: takeApprovedSql(schema),
    lock: decisionLockSql(schema),
    row: decisionRowSql(schema),
    decide: decideSql(schema),
    list: listAwaitingSql(schema),
    count: countAwaitingSql(schema),
  });
}
