import type { KeyForm } from '../../support/key-form.js';
import { cell, html, jsonBlock, type Markup, time } from '../html.js';
import type { PageContext } from '../layout.js';
import { keyText, resolveForm, selectBox, writeBlocked } from './run-parts.js';

/** A run waiting in the unknown-outcome inbox. */
export interface UnknownItem {
  readonly id: string;
  readonly tenant: string;
  readonly tool: string;
  readonly key: KeyForm;
  readonly attempt: number;
  readonly updatedAt: Date;
  /** Why it is unknown (support/run-view.ts `unknownReason`), scrubbed. */
  readonly why: string;
  /** The stored error, scrubbed. */
  readonly error: unknown;
}

/** The inbox of unknown outcomes: each with why, the scrubbed record, and the form that settles it. */
export function unknownInbox(items: readonly UnknownItem[], context: PageContext, limit: number): Markup {
  if (items.length === 0)
    return html`<p role="status">No outcome is unknown: nothing waits for a person.</p>`;
  return html`<p>${items.length}${items.length === limit ? '+' : ''} run${items.length === 1 ? '' : 's'} interrupted mid-effect, oldest first. Ask the provider whether each effect happened (by the step's provider key), then settle it. The ledger keeps the arguments' hash, not the arguments: the steps and the recorded message below are what it knows.</p>
${items.map(
  (item) => html`<section class="decision" aria-labelledby="u${item.id}">
<h2 id="u${item.id}"><a href="/runs/${item.id}">Run ${item.id}</a>: ${cell(item.tool, 80)} in ${cell(item.tenant, 80)}</h2>
${selectBox(item.id, BULK_FORM, context)}
<p>Key ${cell(keyText(item.key))} · attempt ${item.attempt} · since ${time(item.updatedAt)}</p>
<p><strong>Why unknown:</strong> ${cell(item.why, 600)}</p>
${item.error === null ? html`` : html`<details><summary>Recorded error (scrubbed)</summary>${jsonBlock(item.error)}</details>`}
${resolveForm(item.id, context, '/inbox/unknown')}
</section>`,
)}
${items.length > 1 ? bulkResolveForm(context) : html``}`;
}

const BULK_FORM = 'bulk-unknown';

/**
 * Settles the runs selected above in one go, the same way and with one reason: each still gets its own audit
 * entry. A result is each run's own, so only a final failure or a rerun is offered here.
 */
function bulkResolveForm(context: PageContext): Markup {
  if (writeBlocked(context) !== undefined) return html``;
  return html`<section class="decision bulk" aria-labelledby="${BULK_FORM}-h">
<h2 id="${BULK_FORM}-h">Settle the selected runs at once</h2>
<form id="${BULK_FORM}" method="post" action="/inbox/unknown/bulk" aria-label="Settle the selected runs">
<input type="hidden" name="csrf" value="${context.csrf}">
<fieldset><legend>What happened to each selected run? Check the provider for each first.</legend>
<div><input type="radio" id="${BULK_FORM}-failed" name="resolution" value="failed" required> <label for="${BULK_FORM}-failed">None of them happened, and they must not be retried: callers get this failure</label>
<input type="text" id="${BULK_FORM}-failed-message" name="failed" aria-label="Failure message for the selected runs"></div>
<div><input type="radio" id="${BULK_FORM}-rerun" name="resolution" value="rerun"> <label for="${BULK_FORM}-rerun">None of them happened: the next call with each key runs it again</label></div>
</fieldset>
<label for="${BULK_FORM}-reason">Reason for all of them (required, recorded with your name, ${context.identity.actor}, on each run)</label>
<textarea id="${BULK_FORM}-reason" name="reason" required></textarea>
<div class="buttons"><button type="submit">Resolve selected</button></div>
</form>
</section>`;
}
