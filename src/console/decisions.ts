import { ToolLedgerError } from '../contract/errors.js';
import type { SupportDb } from '../support/db.js';
import { SupportRefusal } from '../support/refusal.js';
import { resolutionOf, resolveUnknown } from '../support/resolve.js';
import type { ConsoleApprovals } from './approvals.js';
import { html, type Markup } from './html.js';
import { type Form, Refused } from './http.js';
import { notice, type PageContext } from './layout.js';
import type { ResolvedConsoleOptions } from './options.js';
import { INBOX_LIMIT, type PageReads } from './reads.js';

// The console's writes: settling unknown outcomes and deciding approvals, one at a time or several with one reason.
// Each answers the address to go back to (POST, then redirect, then GET); the actor is always the signed-in
// identity, never a field of the form.

const RUN_ID = /^\d{1,19}$/;

/** What a bulk action did, carried back in the redirect's query as counts only (never a key). */
interface BulkCounts {
  readonly done: number;
  readonly skipped: number;
  readonly refused: number;
}

const bulkQuery = (done: string, c: BulkCounts) =>
  `?done=${done}&n=${c.done}&skipped=${c.skipped}&refused=${c.refused}`;

export class ConsoleDecisions {
  readonly #options: ResolvedConsoleOptions;
  readonly #db: SupportDb;
  readonly #reads: PageReads;
  readonly #approvals: ConsoleApprovals;
  readonly #writable: boolean;

  constructor(
    options: ResolvedConsoleOptions,
    db: SupportDb,
    reads: PageReads,
    approvals: ConsoleApprovals,
    writable: boolean,
  ) {
    this.#options = options;
    this.#db = db;
    this.#reads = reads;
    this.#approvals = approvals;
    this.#writable = writable;
  }

  /** Refuses a write the console or the identity may not make, and answers the required reason. */
  #allowed(ctx: PageContext, form: Form, what: string): string {
    if (!this.#writable)
      throw new Refused(403, 'This console is read-only: it was started without --allow-writes.');
    if (ctx.identity.role !== 'operator')
      throw new Refused(403, `${what} the operator role; you are a viewer.`);
    const reason = (form.get('reason') ?? '').trim();
    if (reason === '') throw new Refused(400, 'Give a reason: it is recorded with your name.');
    return reason;
  }

  /** The runs a bulk form selected: at least one, at most an inbox's worth, each a run id, each once. */
  #selected(form: Form): string[] {
    const ids = [...new Set(form.getAll('run'))];
    if (ids.length === 0) throw new Refused(400, 'Select at least one run: tick its box, then decide.');
    if (ids.length > INBOX_LIMIT) throw new Refused(400, `Select at most ${INBOX_LIMIT} runs at a time.`);
    if (!ids.every((id) => RUN_ID.test(id))) throw new Refused(400, 'A selected run is not a run id.');
    return ids;
  }

  /** Settles one unknown run as `form` says; false when it had left status unknown meanwhile. */
  async #resolveOne(ctx: PageContext, id: string, form: Form, reason: string): Promise<boolean> {
    const kind = form.get('resolution');
    const resolution = resolutionOf({
      ...(kind === 'result' ? { result: form.get('result') ?? '' } : {}),
      ...(kind === 'failed' ? { failed: form.get('failed') ?? '' } : {}),
      rerun: kind === 'rerun',
    });
    const row = await this.#reads.row(id);
    if (row === undefined) throw new Refused(404, `No run ${id}.`);
    const outcome = await resolveUnknown(this.#db, this.#options.schema, {
      key: row.idempotency_key,
      tenant: row.tenant_id,
      tool: row.tool_name,
      resolution,
      by: ctx.identity.actor,
      reason,
      dryRun: false,
      secret: await this.#reads.secret(),
    });
    return outcome.runs.length > 0;
  }

  async resolve(ctx: PageContext, id: string, form: Form): Promise<string> {
    const reason = this.#allowed(ctx, form, 'Resolving needs');
    const changed = await this.#resolveOne(ctx, id, form, reason);
    this.#options.log(
      `tool-ledger console: run ${id} resolved as ${form.get('resolution')} by ${ctx.identity.actor}`,
    );
    const back = form.get('return');
    const target = back === '/inbox/unknown' ? back : `/runs/${id}`;
    return `${target}?done=${changed ? 'resolved' : 'nothing'}`;
  }

  /**
   * Settles every selected unknown run the same way (a final failure or a rerun; a result is each run's own, so
   * given one at a time), each in its own transaction with its own audit entry naming the operator and the reason.
   * A run that left status unknown meanwhile is skipped; a refusal for one run is counted and logged, not fatal.
   */
  async bulkResolve(ctx: PageContext, form: Form): Promise<string> {
    const reason = this.#allowed(ctx, form, 'Resolving needs');
    const kind = form.get('resolution');
    if (kind !== 'failed' && kind !== 'rerun')
      throw new Refused(
        400,
        'Settle the selected runs as failed (with a message) or to run again; give a result one run at a time.',
      );
    resolutionOf({
      ...(kind === 'failed' ? { failed: form.get('failed') ?? '' } : {}),
      rerun: kind === 'rerun',
    });
    const counts = { done: 0, skipped: 0, refused: 0 };
    for (const id of this.#selected(form)) {
      try {
        if (await this.#resolveOne(ctx, id, form, reason)) counts.done++;
        else counts.skipped++;
      } catch (error) {
        // Gone, or no longer unknown (settled by someone else meanwhile): skipped, nothing changed.
        if (
          (error instanceof Refused && error.status === 404) ||
          (error instanceof SupportRefusal && error.kind === 'not_found')
        )
          counts.skipped++;
        else if (error instanceof SupportRefusal) {
          counts.refused++;
          this.#options.log(`tool-ledger console: run ${id} not resolved: ${error.message}`);
        } else throw error;
      }
    }
    this.#options.log(
      `tool-ledger console: ${counts.done} runs resolved as ${kind} by ${ctx.identity.actor} (bulk)`,
    );
    return `/inbox/unknown${bulkQuery('bulk-resolved', counts)}`;
  }

  /** Approves or declines one call; false when another decision won, or nothing waits any more. */
  async #decideOne(ctx: PageContext, id: string, decision: 'approve' | 'decline', reason: string) {
    const row = await this.#reads.row(id);
    if (row === undefined) throw new Refused(404, `No run ${id}.`);
    try {
      await this.#approvals.decide(
        { tenant: row.tenant_id, tool: row.tool_name, key: row.idempotency_key },
        decision,
        ctx.identity.actor,
        reason,
      );
    } catch (error) {
      // Lost a race, or nothing waits any more: said plainly, nothing changed.
      if (error instanceof ToolLedgerError && error.code.startsWith('APPROVAL_'))
        throw new Refused(409, error.message);
      throw error;
    }
  }

  #decision(form: Form): 'approve' | 'decline' {
    const decision = form.get('decision');
    if (decision !== 'approve' && decision !== 'decline') throw new Refused(400, 'Press Approve or Decline.');
    return decision;
  }

  async decide(ctx: PageContext, id: string, form: Form): Promise<string> {
    const reason = this.#allowed(ctx, form, 'Approving and declining need');
    const decision = this.#decision(form);
    await this.#decideOne(ctx, id, decision, reason);
    this.#options.log(`tool-ledger console: run ${id} ${decision}d by ${ctx.identity.actor}`);
    return `/inbox/approvals?done=${decision}d`;
  }

  /**
   * Approves or declines every selected call with one reason, each through `ledger.approve`/`decline` (its own
   * lock and audit-chain entry). A call another decision took, or that expired, is skipped.
   */
  async bulkDecide(ctx: PageContext, form: Form): Promise<string> {
    const reason = this.#allowed(ctx, form, 'Approving and declining need');
    const decision = this.#decision(form);
    const counts = { done: 0, skipped: 0, refused: 0 };
    for (const id of this.#selected(form)) {
      try {
        await this.#decideOne(ctx, id, decision, reason);
        counts.done++;
      } catch (error) {
        if (!(error instanceof Refused) || (error.status !== 404 && error.status !== 409)) throw error;
        counts.skipped++;
      }
    }
    this.#options.log(
      `tool-ledger console: ${counts.done} calls ${decision}d by ${ctx.identity.actor} (bulk)`,
    );
    return `/inbox/approvals${bulkQuery(`bulk-${decision}d`, counts)}`;
  }
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** The news a decision's redirect carries back, said above the page. */
export function decisionNews(query: URLSearchParams): Markup {
  const done = query.get('done');
  if (done === 'approved' || done === 'declined')
    return notice(
      'status',
      `${done === 'approved' ? 'Approved' : 'Declined'}: recorded in the audit with your name.`,
    );
  if (done === 'resolved') return notice('status', 'Resolved: recorded in the audit with your name.');
  if (done === 'nothing')
    return notice('alert', 'Nothing changed: the run had left status unknown meanwhile.');
  const verb = { 'bulk-resolved': 'Resolved', 'bulk-approved': 'Approved', 'bulk-declined': 'Declined' }[
    done ?? ''
  ];
  if (verb === undefined) return html``;
  const count = (name: string) => Math.min(Number(query.get(name)) || 0, INBOX_LIMIT);
  const [n, skipped, refused] = [count('n'), count('skipped'), count('refused')];
  const news = [
    `${verb} ${plural(n, 'run', 'runs')}, each recorded in the audit with your name and reason.`,
    skipped === 0 ? '' : ` ${plural(skipped, 'run was', 'runs were')} skipped: decided or changed meanwhile.`,
    refused === 0 ? '' : ` ${plural(refused, 'run was', 'runs were')} refused: see the console's log.`,
  ].join('');
  return notice(skipped + refused === 0 ? 'status' : 'alert', news);
}
