import { runsTable } from '../../ledger/sql.js';
import { fields, formatDuration, formatTime, indent, jaegerTraceUrl, quoted, table } from '../format.js';
import { type KeyForm, keyCell } from '../key-display.js';
import { scrubText, scrubValue } from '../scrub.js';

// A run as support reads it (inspect, forget): the row's columns, and its view as data and as text, scrubbed.

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
function stepsView(row: InspectRow) {
  return Object.entries(row.steps ?? {}).map(([name, step]) => {
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
function scrubStoredError(error: Record<string, unknown> | null): unknown {
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

/** How `inspect` finds runs: one full key, a key in any tenant and tool, or a background job id. */
export type InspectLookup =
  | { readonly by: 'key'; readonly key: string; readonly tenant?: string; readonly tool?: string }
  | { readonly by: 'job'; readonly jobId: string; readonly tenant?: string; readonly tool?: string };

/** The lookup in words, every value escaped: a typed or pasted key can hold terminal control sequences too. */
export function describeLookup(lookup: InspectLookup): string {
  const scope = `${lookup.tenant === undefined ? '' : `tenant ${quoted(lookup.tenant)}, `}${
    lookup.tool === undefined ? '' : `tool ${quoted(lookup.tool)}, `
  }`;
  return lookup.by === 'key' ? `${scope}key ${quoted(lookup.key)}` : `${scope}job ${quoted(lookup.jobId)}`;
}

/** A run as `inspect` shows it: `data` for `--json`, `text` for a person. */
export function describeRun(
  row: InspectRow,
  shownKey: KeyForm,
  shownUser: KeyForm | null,
  jaegerUrl: string,
  schema: string,
): { data: Record<string, unknown>; text: string } {
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
  let lease = '-';
  if (row.status === 'in_progress' && row.lease_expires_at) {
    const lapsedFor = (row.db_now.getTime() - row.lease_expires_at.getTime()) / 1000;
    lease = row.lease_lapsed
      ? `LAPSED ${formatDuration(lapsedFor)} ago (was held by ${row.lease_owner ?? '?'} until ${formatTime(row.lease_expires_at)}): stuck; the next duplicate call takes it over`
      : `held by ${row.lease_owner ?? '?'} until ${formatTime(row.lease_expires_at)}`;
  }
  const status = `${row.status}${row.status === 'failed' ? (row.final ? ' (final)' : ' (retryable)') : ''}${
    expired ? ' (expired: the key counts as new)' : ''
  }`;
  const lines = [
    `Run ${row.id} in ${runsTable(schema)}`,
    fields([
      ['tenant', row.tenant_id],
      ['tool', row.tool_name],
      ['key', keyCell(shownKey)],
      ['user', shownUser === null ? '-' : keyCell(shownUser)],
      ['status', status],
      ['attempt', String(row.attempt)],
      ['parameter hash', row.parameter_hash],
      ['job id', row.job_id ?? '-'],
      ['lease', lease],
      ['created', formatTime(row.created_at)],
      ['started', formatTime(row.started_at)],
      ['updated', formatTime(row.updated_at)],
      ['completed', formatTime(row.completed_at)],
      ['expires', formatTime(row.expires_at)],
      [
        'conflicts',
        row.conflict_count > 0 ? `${row.conflict_count} (last ${formatTime(row.last_conflict_at)})` : '0',
      ],
      ['trace id', row.trace_id ?? '- (telemetry was off for this call)'],
      ['span id', row.span_id ?? '-'],
      ['jaeger', jaeger ?? '-'],
    ]),
  ];
  if (row.result_json !== null && row.result_json !== undefined) {
    lines.push('result (scrubbed):', indent(JSON.stringify(result, null, 2)));
  }
  if (row.error_json !== null && row.error_json !== undefined) {
    lines.push('error (scrubbed):', indent(JSON.stringify(error, null, 2)));
  }
  if (data.steps.length > 0) {
    lines.push(
      'steps (results scrubbed):',
      indent(
        table(
          ['STEP', 'STATUS', 'ATTEMPT', 'STARTED', 'COMPLETED', 'RESULT'],
          data.steps.map((s) => [
            s.name,
            s.unknown ? 'started, never recorded: outcome unknown' : s.status,
            String(s.attempt),
            s.startedAt ?? '-',
            s.completedAt ?? '-',
            s.result === null
              ? s.error
                ? String((s.error as { message?: unknown }).message ?? '')
                : '-'
              : JSON.stringify(s.result),
          ]),
        ),
      ),
    );
  }
  return { data, text: lines.join('\n') };
}
