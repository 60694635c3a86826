import type pg from 'pg';
import type { ApprovalDecision } from '../contract/approval.js';
import { ToolLedgerError } from '../contract/errors.js';
import { createLedger, type Ledger } from '../create-ledger.js';
import { awaitingView } from '../support/approvals.js';
import type { ApprovalsInbox } from './pages/approvals.js';

/** How many calls the inbox lists. */
export const APPROVALS_LIMIT = 100;

/**
 * The approvals inbox and its decisions, through the ledger's public API (`approvals.list`, `approve`, `decline`)
 * on the console's own pool, so a decision takes the key's lock, is audited and wakes waiting callers exactly as
 * `ledger.approve` does anywhere else.
 */
export class ConsoleApprovals {
  readonly #ledger: Ledger | undefined;
  readonly #why: string;

  private constructor(ledger: Ledger | undefined, why: string) {
    this.#ledger = ledger;
    this.#why = why;
  }

  /** A desk that reads and decides nothing, and says why. */
  static unavailable(why: string): ConsoleApprovals {
    return new ConsoleApprovals(undefined, why);
  }

  /** A desk over the schema; when the ledger cannot open (a schema from before approvals), one that says why. */
  static async open(pool: pg.Pool, schema: string): Promise<ConsoleApprovals> {
    try {
      const ledger = await createLedger({ pool, schema, migrate: false, telemetry: false });
      return new ConsoleApprovals(ledger, '');
    } catch (error) {
      return new ConsoleApprovals(
        undefined,
        `Approvals cannot be read here: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  async inbox(secret: string | undefined): Promise<ApprovalsInbox> {
    if (this.#ledger === undefined) return { kind: 'unavailable', why: this.#why };
    const waiting = await this.#ledger.approvals.list({ limit: APPROVALS_LIMIT });
    return {
      kind: 'items',
      limit: APPROVALS_LIMIT,
      items: waiting.map((a) => awaitingView(a, secret)),
    };
  }

  async decide(
    target: { readonly tenant: string; readonly tool: string; readonly key: string },
    decision: 'approve' | 'decline',
    by: string,
    reason: string,
  ): Promise<ApprovalDecision> {
    if (this.#ledger === undefined) throw new ToolLedgerError('CONFIG_INVALID', this.#why);
    return decision === 'approve'
      ? this.#ledger.approve({ ...target, by, reason })
      : this.#ledger.decline({ ...target, by, reason });
  }

  async close(): Promise<void> {
    await this.#ledger?.close();
  }
}
