import type { ForgottenRecord } from '../../support/forget.js';
import type { SearchHit, SearchResult } from '../../support/search.js';
import { cell, html, type Markup, time } from '../html.js';
import type { PageContext } from '../layout.js';
import { keyText } from './run-parts.js';

/** The statuses a search offers; the ledger may hold others (a later version's), searchable as typed. */
export const SEARCH_STATUSES = [
  'in_progress',
  'succeeded',
  'failed',
  'unknown',
  'awaiting_approval',
  'approved',
  'declined',
] as const;

/** The search form's fields, as typed (the form is posted, so a key never lands in a URL or an access log). */
export interface SearchForm {
  readonly key: string;
  readonly tenant: string;
  readonly tool: string;
  readonly status: string;
  readonly user: string;
  /** `YYYY-MM-DDTHH:MM` in UTC, as <input type="datetime-local"> sends it. */
  readonly from: string;
  readonly to: string;
}

const minute = (date: Date) => date.toISOString().slice(0, 16);

/** The form as it first shows: the last 24 hours. */
export function defaultSearchForm(now = new Date()): SearchForm {
  return {
    key: '',
    tenant: '',
    tool: '',
    status: '',
    user: '',
    from: minute(new Date(now.getTime() - 24 * 3600 * 1000)),
    to: minute(new Date(now.getTime() + 60_000)),
  };
}

function field(name: keyof SearchForm, label: string, value: string, type = 'text'): Markup {
  return html`<div><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" type="${type}" value="${value}" autocomplete="off" spellcheck="false"></div>`;
}

/** The search form; `hidden` carries the same filters under "Next page". */
export function searchFormMarkup(form: SearchForm, context: PageContext): Markup {
  return html`<form class="search" method="post" action="/search" role="search" aria-label="Search runs">
<input type="hidden" name="csrf" value="${context.csrf}">
${field('key', 'Key', form.key)}
${field('tenant', 'Tenant', form.tenant)}
${field('tool', 'Tool', form.tool)}
<div><label for="f-status">Status</label><select id="f-status" name="status"><option value="">any</option>${SEARCH_STATUSES.map(
    (s) => html`<option value="${s}"${form.status === s ? html` selected` : html``}>${s}</option>`,
  )}</select></div>
${field('user', 'User', form.user)}
${field('from', 'From (UTC)', form.from, 'datetime-local')}
${field('to', 'To (UTC)', form.to, 'datetime-local')}
<div><button type="submit">Search</button></div>
<p class="none">A key search finds the key's runs at any time, and shows the key as typed; it is sent in the form, never in the address.</p>
</form>`;
}

function hitRow(hit: SearchHit): Markup {
  return html`<tr>
<td><a href="/runs/${hit.id}">${hit.id}</a></td>
<td>${cell(hit.tenant)}</td>
<td>${cell(hit.tool)}</td>
<td>${cell(keyText(hit.key))}</td>
<td class="status-${hit.status}">${hit.status}${hit.leaseLapsed ? ' (stale)' : ''}</td>
<td>${hit.attempt}</td>
<td>${hit.conflictCount}</td>
<td>${time(hit.createdAt)}</td>
<td>${time(hit.updatedAt)}</td>
</tr>`;
}

/** The results under the form, with "Next page" posting the same filters and the cursor. */
export function searchResultsMarkup(
  form: SearchForm,
  result: SearchResult,
  context: PageContext,
  forgotten: readonly ForgottenRecord[] = [],
): Markup {
  if (result.hits.length === 0 && forgotten.length > 0) {
    return html`<h2 id="forgotten">This key was forgotten</h2>
<table aria-labelledby="forgotten"><thead><tr><th scope="col">Run</th><th scope="col">Tenant</th><th scope="col">Tool</th><th scope="col">Forgotten</th><th scope="col">By</th><th scope="col">Reason (scrubbed)</th></tr></thead>
<tbody>${forgotten.map(
      (f) =>
        html`<tr><td>${f.runId}</td><td>${cell(f.tenant)}</td><td>${cell(f.tool)}</td><td>${time(f.forgottenAt)}</td><td>${cell(f.forgottenBy)}</td><td>${cell(f.reason, 400)}</td></tr>`,
    )}</tbody></table>`;
  }
  if (result.hits.length === 0)
    return html`<p role="status">No run matches. Widen the time range, or check the tenant and tool.</p>`;
  const next =
    result.next === null
      ? html``
      : html`<form method="post" action="/search">
<input type="hidden" name="csrf" value="${context.csrf}">
${(Object.keys(form) as (keyof SearchForm)[]).map((k) => html`<input type="hidden" name="${k}" value="${form[k]}">`)}
<input type="hidden" name="cursor" value="${result.next}">
<button type="submit" class="secondary">Next page</button>
</form>`;
  return html`<h2 id="results">Runs <span class="none">(${result.hits.length}${result.next === null ? '' : '+'}, newest first)</span></h2>
<table aria-labelledby="results">
<thead><tr><th scope="col">Run</th><th scope="col">Tenant</th><th scope="col">Tool</th><th scope="col">Key</th><th scope="col">Status</th><th scope="col">Attempt</th><th scope="col">Conflicts</th><th scope="col">Created</th><th scope="col">Updated</th></tr></thead>
<tbody>${result.hits.map(hitRow)}</tbody>
</table>
${next}`;
}
