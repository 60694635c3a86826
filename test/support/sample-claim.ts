import type { ClaimFields } from '../../src/ledger/sql/claim-fields.js';

/**
 * One call's claim and its fence, as the store sends them, for the suites that plan the ledger's statements
 * (test/db/tenant-routing.test.ts on Postgres' own partitions, test/citus/routing.test.ts on Citus).
 */
export const SAMPLE_CLAIM: ClaimFields = {
  tenant: 'acme',
  tool: 'create_invoice',
  key: 'k1',
  user: 'u1',
  paramsHash: 'h',
  leaseOwner: 'host:1:x:1',
  leaseSeconds: 30,
  ttlSeconds: 86400,
  traceId: undefined,
  spanId: undefined,
  jobId: 'job-1',
  allowLeaseTakeover: true,
  wouldWait: true,
};

/** The fence's $1 to $5 of the claim above's first attempt. */
export const SAMPLE_FENCE = ['acme', 'create_invoice', 'k1', 1, 'host:1:x:1'];
