import type { JobStatus } from '../contract/types.js';
import type { RunRow } from '../ledger/run-row.js';
import { unknownStatus } from './failures.js';

export function jobStatusOf<T>(row: RunRow): JobStatus<T> {
  const base = { jobId: row.job_id ?? row.id, attempt: row.attempt };
  const byStatus = {
    succeeded: () => ({ ...base, status: 'succeeded', result: row.result_json as T }),
    failed: () => ({ ...base, status: 'failed', ...(row.error_json ? { error: row.error_json } : {}) }),
    in_progress: () => ({ ...base, status: row.lease_live ? 'running' : 'abandoned' }),
  } as const satisfies Record<RunRow['status'], () => JobStatus<T>>;
  const status: (() => JobStatus<T>) | undefined = byStatus[row.status];
  if (status === undefined) throw unknownStatus(row);
  return status();
}
