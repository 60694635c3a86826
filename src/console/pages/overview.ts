import { html, type Markup } from '../html.js';

/** One row of the overview: runs of a tool in a status, created in the window. */
export interface OverviewRow {
  readonly tool: string;
  readonly status: string;
  readonly count: number;
  readonly conflicts: number;
  readonly stale: number;
  readonly expired: number;
}

/**
 * The share of conflicting calls above which ToolLedgerConflictSpike fires (with more than 0.1 conflicts/s for
 * 5 minutes; prometheus/rules/tool-ledger.rules.yml).
 */
export const CONFLICT_ALERT_SHARE = 0.05;

const percent = (x: number) => `${(x * 100).toFixed(x < 0.01 && x > 0 ? 2 : 1)}%`;

/** Counts by tool and outcome over the window, the conflict rate beside the alert's threshold, stale and expired. */
export function overviewPage(rows: readonly OverviewRow[], hours: number): Markup {
  const total = rows.reduce((n, r) => n + r.count, 0);
  const sum = (f: (r: OverviewRow) => number) => rows.reduce((n, r) => n + f(r), 0);
  const conflicts = sum((r) => r.conflicts);
  const stale = sum((r) => r.stale);
  const expired = sum((r) => r.expired);
  const unknown = sum((r) => (r.status === 'unknown' ? r.count : 0));
  const waiting = sum((r) => (r.status === 'awaiting_approval' ? r.count : 0));
  // Each conflict is a call refused beside the runs' own calls: its share of the calls the ledger answered.
  const share = total + conflicts === 0 ? 0 : conflicts / (total + conflicts);
  const tools = [...new Set(rows.map((r) => r.tool))];
  const statuses = [...new Set(rows.map((r) => r.status))].sort();
  const count = (tool: string, status: string) =>
    rows.find((r) => r.tool === tool && r.status === status)?.count ?? 0;
  const toolShare = (tool: string) => {
    const runs = rows.filter((r) => r.tool === tool).reduce((n, r) => n + r.count, 0);
    const c = rows.filter((r) => r.tool === tool).reduce((n, r) => n + r.conflicts, 0);
    return runs + c === 0 ? 0 : c / (runs + c);
  };
  return html`<form method="get" action="/" class="inline"><label for="hours">Window (hours)</label>
<select id="hours" name="hours">${[1, 6, 24, 72, 168].map(
    (h) => html`<option value="${h}"${h === hours ? html` selected` : html``}>last ${h} h</option>`,
  )}</select> <button type="submit" class="secondary">Show</button></form>
<div class="cards">
<div class="card">Runs created<strong>${total}</strong></div>
<div class="card">Unknown outcomes<strong>${unknown > 0 ? html`<a href="/inbox/unknown">${unknown}</a>` : '0'}</strong></div>
<div class="card">Awaiting approval<strong>${waiting > 0 ? html`<a href="/inbox/approvals">${waiting}</a>` : '0'}</strong></div>
<div class="card">Conflict rate<strong class="${share > CONFLICT_ALERT_SHARE ? 'over' : ''}">${percent(share)}</strong>alert above ${percent(CONFLICT_ALERT_SHARE)}</div>
<div class="card">Stale (lease lapsed)<strong>${stale}</strong></div>
<div class="card">Expired, not purged<strong>${expired}</strong></div>
</div>
<h2 id="by-tool">By tool and outcome, last ${hours} h</h2>
${
  tools.length === 0
    ? html`<p class="none">No runs in this window.</p>`
    : html`<table aria-labelledby="by-tool"><thead><tr><th scope="col">Tool</th>${statuses.map((s) => html`<th scope="col">${s}</th>`)}<th scope="col">Conflicts</th><th scope="col">Conflict rate</th></tr></thead>
<tbody>${tools.map(
        (tool) =>
          html`<tr><th scope="row">${tool}</th>${statuses.map((s) => html`<td>${count(tool, s)}</td>`)}<td>${rows
            .filter((r) => r.tool === tool)
            .reduce(
              (n, r) => n + r.conflicts,
              0,
            )}</td><td class="${toolShare(tool) > CONFLICT_ALERT_SHARE ? 'over' : ''}">${percent(toolShare(tool))}</td></tr>`,
      )}</tbody></table>`
}`;
}
