import type { KeyForm } from '../../support/key-form.js';
import { cell, html, jsonBlock, type Markup, time } from '../html.js';
import type { PageContext } from '../layout.js';
import { keyText, selectBox, writeBlocked } from './run-parts.js';

/** A call waiting in the approvals inbox, its arguments scrubbed. */
export interface ApprovalItem {
  readonly runId: string;
  readonly tenant: string;
  readonly tool: string;
  readonly key: KeyForm;
  readonly user: KeyForm | null;
  readonly requestedAt: Date;
  readonly deadline: Date;
  readonly arguments: unknown;
}

/** The approvals inbox, or why it cannot show one. */
export type ApprovalsInbox =
  | { readonly kind: 'items'; readonly items: readonly ApprovalItem[]; readonly limit: number }
  | { readonly kind: 'unavailable'; readonly why: string };

/**
 * Approve and Decline share one form, so the reason box serves both; the button pressed is the decision. The
 * actor is the signed-in identity, never a field of the form.
 */
function decisionForm(item: ApprovalItem, context: PageContext): Markup {
  const blocked = writeBlocked(context);
  if (blocked !== undefined) return html`<p class="none">${blocked}</p>`;
  const id = `a${item.runId}`;
  return html`<form method="post" action="/approvals/${item.runId}/decide" aria-label="Decide on run ${item.runId}">
<input type="hidden" name="csrf" value="${context.csrf}">
<label for="${id}-reason">Reason (required, recorded with your name, ${context.identity.actor})</label>
<textarea id="${id}-reason" name="reason" required></textarea>
<div class="buttons"><button type="submit" name="decision" value="approve">Approve</button> <button type="submit" name="decision" value="decline" class="danger">Decline</button></div>
</form>`;
}

export function approvalsPage(inbox: ApprovalsInbox, context: PageContext): Markup {
  if (inbox.kind === 'unavailable') return html`<p role="status">${inbox.why}</p>`;
  if (inbox.items.length === 0) return html`<p role="status">No call awaits approval.</p>`;
  return html`<p>${inbox.items.length}${inbox.items.length === inbox.limit ? '+' : ''} call${inbox.items.length === 1 ? '' : 's'} awaiting a decision, oldest first. Approving lets the agent's next call with the same key and arguments run the tool once; declining answers every call with the key with your reason.</p>
${inbox.items.map(
  (item) => html`<section class="decision" aria-labelledby="ap${item.runId}">
<h2 id="ap${item.runId}"><a href="/runs/${item.runId}">Run ${item.runId}</a>: ${cell(item.tool, 80)} in ${cell(item.tenant, 80)}</h2>
${selectBox(item.runId, BULK_FORM, context)}
<p>Key ${cell(keyText(item.key))} · user ${item.user === null ? '-' : cell(keyText(item.user))} · asked ${time(item.requestedAt)} · expires ${time(item.deadline)}</p>
<details open><summary>Arguments (scrubbed)</summary>${jsonBlock(item.arguments)}</details>
${decisionForm(item, context)}
</section>`,
)}
${inbox.items.length > 1 ? bulkDecisionForm(context) : html``}`;
}

const BULK_FORM = 'bulk-approvals';

/** Approves or declines the calls selected above with one reason; each decision is its own audit-chain entry. */
function bulkDecisionForm(context: PageContext): Markup {
  if (writeBlocked(context) !== undefined) return html``;
  return html`<section class="decision bulk" aria-labelledby="${BULK_FORM}-h">
<h2 id="${BULK_FORM}-h">Decide on the selected calls at once</h2>
<form id="${BULK_FORM}" method="post" action="/inbox/approvals/bulk" aria-label="Decide on the selected calls">
<input type="hidden" name="csrf" value="${context.csrf}">
<label for="${BULK_FORM}-reason">Reason for all of them (required, recorded with your name, ${context.identity.actor}, on each call)</label>
<textarea id="${BULK_FORM}-reason" name="reason" required></textarea>
<div class="buttons"><button type="submit" name="decision" value="approve">Approve selected</button> <button type="submit" name="decision" value="decline" class="danger">Decline selected</button></div>
</form>
</section>`;
}
