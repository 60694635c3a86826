import type { KeyForm } from './key-form.js';
import { scrubText, scrubValue } from './scrub.js';
import { jaegerTraceUrl } from './trace.js';

// A run as support reads it (the CLI's inspect and forget, the console's run page): the row's columns, and its
// view as data, results and errors scrubbed.

/** A recorded step as the `steps` column keeps it (see src/ledger/run-row.ts). */
interface StepRecordView {
  status: string;
  attempt: number;
  result?: string | null;
  error?: Record<string, unknown> | null;
  startedAt?: string;
  completedAt?: string;
}

/** A run's steps for support: status, attempt and times, results and errors scrubbed like the run's. */
export function stepsView(row: InspectRow) {
  // In the order they started (the column keeps them by name, as jsonb orders keys).
  const ordered = Object.entries(row.steps ?? {}).sort(
    ([a, x], [b, y]) => (x.startedAt ?? '').localeCompare(y.startedAt ?? '') || a.localeCompare(b),
  );
  return ordered.map(([name, step]) => {
    let result: unknown = null;
    if (typeof step.result === 'string') {
      try {
        result = scrubValue(JSON.parse(step.result));
      } catch {
        result = scrubValue(step.result);
      }
    }
    return {
      name,
      status: step.status,
      // Started by an earlier attempt of a run still in flight (or marked unknown): its effect may have happened.
      unknown: step.status === 'started' && (row.status === 'unknown' || step.attempt < row.attempt),
      attempt: step.attempt,
      startedAt: step.startedAt ?? null,
      completedAt: step.completedAt ?? null,
      result,
      error: step.error ? scrubStoredError(step.error) : null,
    };
  });
}

/** A run with every column support may need (`runsByKeySql`, `runsByJobSql`). */
export interface InspectRow {
  id: string;
  tenant_id: string;
  tool_name: string;
  idempotency_key: string;
  user_id: string | null;
  parameter_hash: string;
  status: string;
  final: boolean;
  attempt: number;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  result_json: unknown;
  error_json: Record<string, unknown> | null;
  job_id: string | null;
  trace_id: string | null;
  span_id: string | null;
  conflict_count: number;
  last_conflict_at: Date | null;
  created_at: Date;
  started_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  expires_at: Date;
  lease_lapsed: boolean | null;
  db_now: Date;
  steps: Record<string, StepRecordView> | null;
}

/**
 * The stored error keeps its machine fields; what a person or the world wrote is scrubbed: the message, the
 * details and a `ToolFailure`'s reason, which handlers fill from whatever the downstream service said.
 */
export function scrubStoredError(error: Record<string, unknown> | null): unknown {
  if (error === null || typeof error !== 'object') return error;
  const { message, details, reason, ...rest } = error;
  const scrubbed = (value: unknown) => (typeof value === 'string' ? scrubText(value) : scrubValue(value));
  return {
    ...rest,
    ...(message === undefined ? {} : { message: scrubbed(message) }),
    ...(reason === undefined ? {} : { reason: scrubbed(reason) }),
    ...(details === undefined ? {} : { details: scrubValue(details) }),
  };
}

/** A run as support shows it: every column it may need, its key and user as telemetry would show them, scrubbed. */
export function runData(row: InspectRow, shownKey: KeyForm, shownUser: KeyForm | null, jaegerUrl: string) {
  const expired =
    row.expires_at.getTime() <= row.db_now.getTime() && !(row.status === 'in_progress' && !row.lease_lapsed);
  const jaeger = row.trace_id ? jaegerTraceUrl(jaegerUrl, row.trace_id) : null;
  const result = scrubValue(row.result_json);
  // The user id came from the caller and may be an email or a name: it is shown as telemetry would show such an
  // id (the key policy: raw when safe, else its HMAC), never merely with the recognisable parts masked.
  const user = shownUser === null ? null : shownUser.key;
  const error = scrubStoredError(row.error_json);
  const data = {
    id: row.id,
    tenant: row.tenant_id,
    tool: row.tool_name,
    key: shownKey.key,
    ...(shownKey.key === null ? { keyHash: shownKey.keyHash } : {}),
    user,
    ...(shownUser !== null && shownUser.key === null ? { userHash: shownUser.keyHash } : {}),
    status: row.status,
    final: row.final,
    attempt: row.attempt,
    parameterHash: row.parameter_hash,
    jobId: row.job_id,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    leaseLapsed: Boolean(row.lease_lapsed),
    expired,
    conflictCount: row.conflict_count,
    lastConflictAt: row.last_conflict_at,
    createdAt: row.created_at,
    startedAt: row.started_at,
    updatedAt: row.updated_at,
    completedAt: row.completed_at,
    expiresAt: row.expires_at,
    result,
    error,
    steps: stepsView(row),
    traceId: row.trace_id,
    spanId: row.span_id,
    jaegerUrl: jaeger,
  };
  return data;
}

/** What `runData` gives. */
export type RunData = ReturnType<typeof runData>;

/**
 * Why a run is in status unknown, in one line: the steps an interrupted attempt started and never recorded (their
 * effect may have happened), and the recorded message, scrubbed. What `list --status unknown` and the console's
 * inbox show beside each run.
 */
export function unknownReason(row: Pick<InspectRow, 'status' | 'attempt' | 'error_json' | 'steps'>): string {
  const steps = Object.entries(row.steps ?? {})
    .filter(([, step]) => step.status === 'started')
    .map(([name, step]) => `${name} (attempt ${step.attempt})`);
  const message = row.error_json?.message;
  const parts = [
    steps.length === 0 ? undefined : `started, never recorded: ${steps.join(', ')}`,
    typeof message === 'string' && message !== '' ? scrubText(message) : undefined,
  ].filter((p): p is string => p !== undefined);
  return parts.length === 0 ? 'interrupted mid-effect (no step or message recorded)' : parts.join('; ');
}
