import type { ConflictReason } from '../contract/errors.js';
import { type ClaimRow, isExpired, leaseRemainingMs } from '../ledger/run-row.js';

/** What a claim statement's answer means for this call. */
export type ClaimVerdict =
  | { readonly kind: 'won' }
  | { readonly kind: 'replay' }
  | { readonly kind: 'final_failure' }
  | { readonly kind: 'conflict'; readonly reason: ConflictReason }
  | { readonly kind: 'running' }
  | { readonly kind: 'abandoned' }
  /** The row changed between the statement's snapshot and its write: claim again. */
  | { readonly kind: 'raced' };

export function judgeClaim(
  row: ClaimRow,
  request: { user: string | undefined; paramsHash: string; allowLeaseTakeover: boolean },
): ClaimVerdict {
  if (row.claim !== 'existing') return { kind: 'won' };
  if (isExpired(row)) return { kind: 'raced' };
  if (row.user_id !== (request.user ?? null)) return { kind: 'conflict', reason: 'user_mismatch' };
  if (row.parameter_hash !== request.paramsHash) return { kind: 'conflict', reason: 'params_mismatch' };
  switch (row.status) {
    case 'succeeded':
      return { kind: 'replay' };
    case 'failed':
      return row.final ? { kind: 'final_failure' } : { kind: 'raced' };
    default:
      if (leaseRemainingMs(row) > 0) return { kind: 'running' };
      return request.allowLeaseTakeover ? { kind: 'raced' } : { kind: 'abandoned' };
  }
}
