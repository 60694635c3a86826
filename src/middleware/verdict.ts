import type { ConflictReason } from '../contract/errors.js';
import type { ClaimRow } from '../ledger/run-row.js';
import { strayAnswer, unknownStatus } from './messages.js';

/** What each verdict carries besides its kind. */
interface VerdictFields {
  /** This call holds the claim (a new run, or a takeover): run the handler. */
  readonly won: { readonly row: ClaimRow };
  /** A saved success: return it. */
  readonly replay: { readonly row: ClaimRow };
  /** A saved final failure: replay it. */
  readonly final_failure: { readonly row: ClaimRow };
  /** The key belongs to a different request. */
  readonly conflict: { readonly row: ClaimRow; readonly reason: ConflictReason };
  /** Another execution holds a live lease. */
  readonly running: { readonly row: ClaimRow };
  /** A lapsed lease that may not be taken over (a job with `resumeAbandoned: false`). */
  readonly abandoned: { readonly row: ClaimRow };
  /**
   * The row is this call's own: an earlier claim from this process whose answer was lost, retried with its owner
   * token. Renew the lease, then run the handler.
   */
  readonly reclaimed: { readonly row: ClaimRow };
  /** An interrupted effect whose rule was `'fail'`: the row waits for an operator to settle it. */
  readonly unknown: { readonly row: ClaimRow };
  /** The run awaits a person's decision (or did until its deadline passed: the approval gate reads which). */
  readonly awaiting: { readonly row: ClaimRow };
  /** A person approved the run: the next call with its key and arguments takes it over and runs the handler. */
  readonly approved: { readonly row: ClaimRow };
  /** A person declined the run: final, every call with the key gets the decline. */
  readonly declined: { readonly row: ClaimRow };
  /** The row changed between the statement's snapshot and its write (or a parallel insert won): claim again. */
  readonly raced: { readonly row: undefined | ClaimRow };
}

export type VerdictKind = keyof VerdictFields;
export type VerdictOf<K extends VerdictKind> = { readonly kind: K } & VerdictFields[K];
/** What a claim statement's answer means for this call. */
export type Verdict = { [K in VerdictKind]: VerdictOf<K> }[VerdictKind];

export interface JudgedRequest {
  readonly user: string | undefined;
  readonly paramsHash: string;
  /** This call's lease owner token (a lost claim's, when retrying one). */
  readonly leaseOwner?: string;
}

/**
 * Reads the claim's answer. Pure: the expiry and takeover rules were applied by the statement, whose flags
 * (`takeover_due`, `lease_live`) this only reads.
 */
export function judgeClaim(row: ClaimRow | undefined, request: JudgedRequest): Verdict {
  // No row: a parallel insert committed between the statement's snapshot and its own insert.
  if (row === undefined) return { kind: 'raced', row };
  // Only the claim statement's own two kinds win: an answer of any other shape (a pooler that crossed two
  // statements' answers once fed a claim another statement's row) is refused, never taken as a licence to run.
  if (row.claim === 'inserted' || row.claim === 'taken') return { kind: 'won', row };
  if (row.claim !== 'existing') throw strayAnswer(row);
  if (row.takeover_due) return { kind: 'raced', row };
  if (row.user_id !== (request.user ?? null)) return { kind: 'conflict', row, reason: 'user_mismatch' };
  if (row.parameter_hash !== request.paramsHash) return { kind: 'conflict', row, reason: 'params_mismatch' };
  const byStatus = {
    succeeded: { kind: 'replay', row },
    // A retryable failure of the same request is always due for takeover, so a failure seen here is final.
    failed: { kind: 'final_failure', row },
    unknown: { kind: 'unknown', row },
    awaiting_approval: { kind: 'awaiting', row },
    approved: { kind: 'approved', row },
    declined: { kind: 'declined', row },
    in_progress:
      row.lease_owner !== null && row.lease_owner === request.leaseOwner
        ? { kind: 'reclaimed', row }
        : row.lease_live
          ? { kind: 'running', row }
          : { kind: 'abandoned', row },
  } as const satisfies Record<ClaimRow['status'], Verdict>;
  const verdict: Verdict | undefined = byStatus[row.status];
  if (verdict === undefined) throw unknownStatus(row);
  return verdict;
}
