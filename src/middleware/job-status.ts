import type { JobStatus } from '../contract/types.js';
import { leaseRemainingMs, type RunRow } from '../ledger/run-row.js';

export function jobStatusOf<T>(row: RunRow): JobStatus<T> {
  const base = { jobId: row.job_id ?? row.id, attempt: row.attempt };
  switch (row.status) {
    case 'succeeded':
      return { ...base, status: 'succeeded', result: row.result_json as T };
    case 'failed':
      return { ...base, status: 'failed', ...(row.error_json ? { error: row.error_json } : {}) };
    default:
      return { ...base, status: leaseRemainingMs(row) > 0 ? 'running' : 'abandoned' };
  }
}
