import type { StoredError } from '../contract/types.js';

export type RunStatus = 'in_progress' | 'succeeded' | 'failed';

/** A `tool_runs` row as the ledger reads it. Internal. */
export interface RunRow {
  readonly id: string;
  readonly tenant_id: string;
  readonly tool_name: string;
  readonly idempotency_key: string;
  readonly user_id: string | null;
  readonly parameter_hash: string;
  readonly status: RunStatus;
  readonly final: boolean;
  readonly attempt: number;
  readonly lease_owner: string | null;
  readonly lease_expires_at: Date | null;
  readonly result_json: unknown;
  readonly error_json: StoredError | null;
  readonly job_id: string | null;
  readonly trace_id: string | null;
  readonly span_id: string | null;
  readonly conflict_count: number;
  readonly created_at: Date;
  readonly started_at: Date;
  readonly completed_at: Date | null;
  readonly expires_at: Date;
  /** Whether the lease still held when the row was read, as SQL decides it. */
  readonly lease_live: boolean;
  /** The database clock when the row was read: lease arithmetic never mixes clocks. */
  readonly db_now: Date;
}

export type ClaimKind = 'inserted' | 'taken' | 'existing';

export interface ClaimRow extends RunRow {
  readonly claim: ClaimKind;
  /**
   * For an `existing` row: the claim's own takeover rule held for it, yet another caller changed the row first
   * (the update's fence refused). Claim again.
   */
  readonly takeover_due: boolean;
  /** This claim registered the caller as waiting on the run in flight, so its completion will notify. */
  readonly waiting: boolean;
}

/** Milliseconds until the lease lapses by the database clock; for how long to wait, never for a rule. */
export function leaseRemainingMs(row: RunRow): number {
  return row.lease_expires_at ? row.lease_expires_at.getTime() - row.db_now.getTime() : 0;
}
