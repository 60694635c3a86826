import type { KeyForm } from '../../support/key-form.js';
import { cell, html, jsonBlock, type Markup, time } from '../html.js';
import type { PageContext } from '../layout.js';
import { keyText, resolveForm } from './run-parts.js';

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
<p>Key ${cell(keyText(item.key))} · attempt ${item.attempt} · since ${time(item.updatedAt)}</p>
<p><strong>Why unknown:</strong> ${cell(item.why, 600)}</p>
${item.error === null ? html`` : html`<details><summary>Recorded error (scrubbed)</summary>${jsonBlock(item.error)}</details>`}
${resolveForm(item.id, context, '/inbox/unknown')}
</section>`,
)}`;
}
