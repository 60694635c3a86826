import { runsTable } from '../../ledger/sql/names.js';
import { type KeyForm, keyCell } from '../../support/key-form.js';
import { type InspectRow, runData } from '../../support/run-view.js';
import { fields, formatDuration, formatTime, indent, quoted, table } from '../format.js';

// A run as the CLI prints it (inspect, forget): support/run-view.ts gives the data, this the text.

export type { InspectRow } from '../../support/run-view.js';

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
  const data = runData(row, shownKey, shownUser, jaegerUrl);
  const { expired, result, error } = data;
  const jaeger = data.jaegerUrl;
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
