import { html, type Markup } from '../html.js';

/** The approvals inbox, until the ledger records approvals: says so rather than showing an empty list. */
export function approvalsPage(): Markup {
  return html`<p role="status">This ledger version records no approvals yet: nothing can wait here.</p>`;
}
