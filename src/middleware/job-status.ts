import type { JobStatus } from '../contract/types.js';
import type { RunRow } from '../ledger/run-row.js';
import { unknownStatus } from './messages.js';

// Literals of fixed fields rather than a spread base plus fields, which Node 20's V8 builds on a slow path.
export function jobStatusOf<T>(row: RunRow): JobStatus<T> {
  const jobId = row.job_id ?? row.id;
  const attempt = row.attempt;
  const byStatus = {
    succeeded: () => ({ jobId, attempt, status: 'succeeded', result: row.result_json as T }),
    failed: () =>
      row.error_json
        ? { jobId, attempt, status: 'failed', error: row.error_json }
        : { jobId, attempt, status: 'failed' },
    in_progress: () => runningJobStatus(row, row.lease_live),
    unknown: () =>
      row.error_json
        ? { jobId, attempt, status: 'unknown', error: row.error_json }
        : { jobId, attempt, status: 'unknown' },
    // A job awaiting a decision, approved or declined has not started: calls meet these rows through the approval
    // gate, and `getJob` answers no job for them (`jobStarted`).
    awaiting_approval: () => {
      throw unknownStatus(row);
    },
    approved: () => {
      throw unknownStatus(row);
    },
    declined: () => {
      throw unknownStatus(row);
    },
  } as const satisfies Record<RunRow['status'], () => JobStatus<T>>;
  const status: (() => JobStatus<T>) | undefined = byStatus[row.status];
  if (status === undefined) throw unknownStatus(row);
  return status();
}

/** A job not finished: running while its lease is live, abandoned once it lapsed. */
export function runningJobStatus(row: RunRow, leaseLive: boolean): JobStatus<never> {
  return { jobId: row.job_id ?? row.id, attempt: row.attempt, status: leaseLive ? 'running' : 'abandoned' };
}

/**
 * Whether a job's row is a job that started: one awaiting a person's approval, approved and not yet started, or
 * declined has no status to report, as a job that does not exist has none.
 */
const JOB_STARTED = {
  in_progress: true,
  succeeded: true,
  failed: true,
  unknown: true,
  awaiting_approval: false,
  approved: false,
  declined: false,
} as const satisfies Record<RunRow['status'], boolean>;

export function jobStarted(row: RunRow): boolean {
  // A status the table does not know (a row edited by hand) counts as started: `jobStatusOf` then refuses it.
  return (JOB_STARTED as Record<string, boolean>)[row.status] !== false;
}
