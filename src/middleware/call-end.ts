import type { ConflictReason } from '../contract/errors.js';
import type { Outcome, RejectedReason, SuccessOutcome } from '../contract/outcomes.js';
import type { ClaimRow } from '../ledger/run-row.js';

/** A call that returns a value. */
export interface Answer {
  readonly outcome: SuccessOutcome;
  readonly value: unknown;
  readonly paramsHash: string | undefined;
  readonly completedAt: Date | undefined;
  /** The ledger row the value came from; undefined for read tools. */
  readonly row: ClaimRow | undefined;
}

/** A call that ends in a thrown error. The outcome is decided where the refusal is made, never from the error. */
export interface Refusal {
  readonly outcome: Outcome;
  readonly error: unknown;
  readonly rejectedReason?: RejectedReason;
  readonly conflictReason?: ConflictReason;
}

export type CallEnd = Answer | Refusal;

export const isRefusal = (end: CallEnd): end is Refusal => 'error' in end;

export const rejected = (rejectedReason: RejectedReason, error: unknown): Refusal => ({
  outcome: 'rejected',
  rejectedReason,
  error,
});
