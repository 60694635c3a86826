import type { StoredError } from '../contract/types.js';

/**
 * `unknown`: an attempt was interrupted mid-effect and the rule was `'fail'`; an operator settles it. The approval
 * states (migration 11, ledger/approvals/): `awaiting_approval` (no handler ran; expired once past
 * `approval_deadline`, which is never stored), `approved` (the next call takes it over and runs the handler) and
 * `declined` (final; `error_json` holds the decline every later call replays).
 */
export type RunStatus =
  | 'in_progress'
  | 'succeeded'
  | 'failed'
  | 'unknown'
  | 'awaiting_approval'
  | 'approved'
  | 'declined';

/** One recorded step of a run, as the `steps` column keeps it. */
export interface StepRecord {
  readonly status: 'started' | 'succeeded' | 'failed';
  /** The attempt that wrote this record. */
  readonly attempt: number;
  /** The result as JSON text, once succeeded. */
  readonly result?: string | null;
  readonly error?: StoredError | null;
  readonly startedAt?: string;
  readonly completedAt?: string;
}

/**
 * What the ledger's statements read of a `tool_runs` row. Internal. Only what a call acts on: the key's columns are
 * the caller's own, and times come as milliseconds from the database clock's `now()`, so lease and expiry
 * arithmetic never mixes clocks and the driver parses no timestamp it does not need.
 */
export interface RunRow {
  readonly id: string;
  readonly user_id: string | null;
  readonly parameter_hash: string;
  readonly status: RunStatus;
  readonly final: boolean;
  readonly attempt: number;
  readonly lease_owner: string | null;
  /** Until the lease lapses (negative once it has); null without a lease. */
  readonly lease_remaining_ms: number | null;
  readonly result_json: unknown;
  readonly error_json: StoredError | null;
  readonly job_id: string | null;
  readonly trace_id: string | null;
  readonly span_id: string | null;
  readonly completed_at: Date | null;
  /** Until the row expires (negative once it has). */
  readonly expires_in_ms: number;
  /** Whether the lease still held when the row was read, as SQL decides it. */
  readonly lease_live: boolean;
}

export type ClaimKind = 'inserted' | 'taken' | 'existing';

/**
 * A run's key, the ledger's primary key since migration 8: tenant first, so a ledger sharded by tenant routes
 * every statement that names it to one shard. Every write of a running execution locates its row by it.
 */
export interface RunKey {
  readonly tenant: string;
  readonly tool: string;
  readonly key: string;
}

export interface ClaimRow extends RunRow {
  readonly claim: ClaimKind;
  /** The key the claim named (not read back: the caller sent it). */
  readonly runKey: RunKey;
  /**
   * For an `existing` row: the claim's own takeover rule held for it, yet another caller changed the row first
   * (the update's fence refused). Claim again.
   */
  readonly takeover_due: boolean;
  /** This claim registered the caller as waiting on the run in flight, so its completion will notify. */
  readonly waiting: boolean;
  /** The run's recorded steps, for a run in flight (a takeover, or a lost claim taken back); else null. */
  readonly steps: Readonly<Record<string, StepRecord>> | null;
  /** The run's step token, drawn at its first step; null before. */
  readonly step_token: string | null;
  /** A `taken` row whose previous attempt held the key and never recorded an outcome (its lease lapsed). */
  readonly lapsed: boolean;
  /**
   * The partitioned layout's claim only: the row's partition key (its exact `expires_at`, as text), which the
   * run's fenced writes name so each touches one partition. Absent in the table layout.
   */
  readonly partition_key?: string;
}

/** Milliseconds until the lease lapses by the database clock; for how long to wait, never for a rule. */
export function leaseRemainingMs(row: RunRow): number {
  return row.lease_remaining_ms ?? 0;
}

/** What a claim found: the key was free and this claim inserted its run, or a claim statement answered rows. */
export type ClaimStep =
  | { readonly kind: 'fresh'; readonly id: string }
  | { readonly kind: 'row'; readonly rows: Record<string, unknown>[] };

/** What a completion returns when its fence let it write: its time, and the expiry left, by the database clock. */
export interface Completed {
  readonly completed_at_ms: number;
  readonly expires_in_ms: number;
}
