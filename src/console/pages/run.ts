import type { RunData } from '../../support/run-view.js';
import type { KeyCall, KeyStory } from '../../support/trace.js';
import { cell, html, jsonBlock, type Markup, time } from '../html.js';
import type { PageContext } from '../layout.js';
import { fields, resolveForm } from './run-parts.js';

/** One record of a run's audit history. */
export interface AuditEntry {
  readonly action: string;
  readonly by: string;
  readonly at: Date;
  readonly reason: string | null;
  readonly detail: string;
}

/** The trace timeline's state: calls read, or why there are none. */
export type Timeline =
  | { readonly kind: 'story'; readonly story: KeyStory }
  | { readonly kind: 'unconfigured'; readonly jaegerLink: string | null };

function stepsTable(run: RunData): Markup {
  if (run.steps.length === 0) return html`<p class="none">No recorded steps.</p>`;
  return html`<table aria-label="Steps">
<thead><tr><th scope="col">Step</th><th scope="col">Status</th><th scope="col">Attempt</th><th scope="col">Started</th><th scope="col">Completed</th><th scope="col">Result or error (scrubbed)</th></tr></thead>
<tbody>${run.steps.map(
    (s) =>
      html`<tr><td>${cell(s.name)}</td><td class="${s.unknown ? 'status-unknown' : ''}">${s.unknown ? 'started, never recorded: outcome unknown' : s.status}</td><td>${s.attempt}</td><td>${time(s.startedAt)}</td><td>${time(s.completedAt)}</td><td>${cell(
        s.result === null ? (s.error === null ? null : JSON.stringify(s.error)) : JSON.stringify(s.result),
        400,
      )}</td></tr>`,
  )}</tbody>
</table>`;
}

function callRow(call: KeyCall, i: number): Markup {
  const label = `${i + 1}. ${call.outcome ?? '?'}`;
  return html`<tr data-start="${call.time}" data-ms="${call.waitedMs ?? 0}" data-outcome="${call.outcome ?? ''}" data-span="${call.spanId ?? ''}" data-original="${call.original?.spanId ?? ''}" data-label="${label}">
<td>${time(call.time)}</td><td>${call.outcome ?? '?'}</td><td>${call.attempt ?? '-'}</td><td>${call.waitedMs === null ? '-' : `${call.waitedMs} ms`}</td><td>${cell(call.traceId)}</td><td>${call.original === null ? html`<span class="none">-</span>` : html`${call.original.traceId}/${call.original.spanId}`}</td><td>${call.sources.join('+')}</td></tr>`;
}

function timelineMarkup(timeline: Timeline): Markup {
  if (timeline.kind === 'unconfigured') {
    return html`<p>No trace timeline: start the console with <code>--jaeger-url</code> (Jaeger's query API) and <code>--logs-url</code> (VictoriaLogs) to read every call made with this key here.${
      timeline.jaegerLink === null
        ? html``
        : html` Meanwhile, <a href="${timeline.jaegerLink}" rel="noreferrer">open the run's trace in Jaeger</a>.`
    }</p>`;
  }
  const { calls, problems } = timeline.story;
  return html`${problems.map((p) => html`<p class="notice alert" role="alert">${p}</p>`)}
${
  calls.length === 0
    ? html`<p class="none">No call with this key found in Jaeger or VictoriaLogs.</p>`
    : html`<table id="calls" aria-label="Calls made with this key, oldest first">
<thead><tr><th scope="col">Time</th><th scope="col">Outcome</th><th scope="col">Attempt</th><th scope="col">Waited</th><th scope="col">Trace</th><th scope="col">Followed (FOLLOWS_FROM)</th><th scope="col">From</th></tr></thead>
<tbody>${calls.map(callRow)}</tbody>
</table>`
}`;
}

function auditTable(entries: readonly AuditEntry[]): Markup {
  if (entries.length === 0) return html`<p class="none">No decisions recorded for this run.</p>`;
  return html`<table aria-label="Audit history">
<thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">By</th><th scope="col">Detail</th><th scope="col">Reason (scrubbed)</th></tr></thead>
<tbody>${entries.map(
    (e) =>
      html`<tr><td>${time(e.at)}</td><td>${e.action}</td><td>${cell(e.by)}</td><td>${cell(e.detail)}</td><td>${cell(e.reason, 400)}</td></tr>`,
  )}</tbody>
</table>`;
}

/** The run page: the row, its steps, the audit history, the trace timeline, and the decision it waits for. */
export function runPage(
  run: RunData,
  audit: readonly AuditEntry[],
  timeline: Timeline,
  context: PageContext,
): Markup {
  const key = run.key ?? (run.keyHash ? `hmac:${run.keyHash}` : '(hidden: set TOOL_LEDGER_KEY_HASH_SECRET)');
  const user =
    run.user ?? (run.userHash ? `hmac:${run.userHash}` : run.userHash === undefined ? '-' : '(hidden)');
  const status = `${run.status}${run.status === 'failed' ? (run.final ? ' (final)' : ' (retryable)') : ''}${
    run.expired ? ' (expired: the key counts as new)' : ''
  }${run.leaseLapsed ? ' (lease lapsed: stuck)' : ''}`;
  return html`${fields([
    ['Tenant', html`${run.tenant}`],
    ['Tool', html`${run.tool}`],
    ['Key', html`${key}`],
    ['User', html`${user}`],
    ['Status', html`<span class="status-${run.status}">${status}</span>`],
    ['Attempts', String(run.attempt)],
    [
      'Conflicts seen',
      run.conflictCount > 0 ? html`${run.conflictCount} (last ${time(run.lastConflictAt)})` : '0',
    ],
    ['Parameter hash', html`${run.parameterHash}`],
    ['Job id', html`${run.jobId ?? '-'}`],
    ['Lease', run.leaseOwner ? html`${run.leaseOwner} until ${time(run.leaseExpiresAt)}` : '-'],
    ['Created', time(run.createdAt)],
    ['Started', time(run.startedAt)],
    ['Updated', time(run.updatedAt)],
    ['Completed', time(run.completedAt)],
    ['Expires', time(run.expiresAt)],
    [
      'Trace id',
      run.jaegerUrl
        ? html`<a href="${run.jaegerUrl}" rel="noreferrer">${run.traceId}</a>`
        : html`${run.traceId ?? '- (telemetry was off for this call)'}`,
    ],
  ])}
${run.status === 'unknown' ? html`<h2>Decision: settle this unknown outcome</h2>${resolveForm(run.id, context, `/runs/${run.id}`)}` : html``}
<h2>Result (scrubbed)</h2>
${run.result === null || run.result === undefined ? html`<p class="none">No result.</p>` : jsonBlock(run.result)}
${run.error === null || run.error === undefined ? html`` : html`<h2>Error (scrubbed)</h2>${jsonBlock(run.error)}`}
<h2>Steps</h2>
${stepsTable(run)}
<h2>Audit history</h2>
${auditTable(audit)}
<h2>Trace timeline</h2>
${timelineMarkup(timeline)}`;
}
