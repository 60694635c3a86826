import { newLeaseOwner } from '../../src/ledger/fence.js';
import type { ClaimRequest } from '../../src/ledger/store.js';

/**
 * A claim as the middleware would send it for a first attempt, for the suites that drive `LedgerStore` directly:
 * a fresh lease owner each time, the key given, everything else a plain default that `overrides` changes.
 */
export function claimRequest(key: string, overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    tenant: 't',
    tool: 'store',
    key,
    user: 'u1',
    paramsHash: 'h1',
    leaseOwner: newLeaseOwner(),
    leaseSeconds: 30,
    ttlSeconds: 3600,
    traceId: undefined,
    spanId: undefined,
    jobId: undefined,
    allowLeaseTakeover: true,
    wouldWait: false,
    ...overrides,
  };
}
