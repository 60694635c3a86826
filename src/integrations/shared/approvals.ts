import { ToolLedgerError } from '../../contract/errors.js';
import type { CallContext, InvokeReport } from '../../contract/types.js';
import type { AdapterTool } from './adapter-tool.js';

/** The tenant a call without one belongs to, as the ledger names it. */
export const DEFAULT_TENANT = 'default';

/** Which call a decision is about: the ledger's intent, never the SDK's approval object. */
export interface ApprovalTarget {
  readonly tenant: string;
  readonly tool: string;
  readonly key: string;
}

/** Who decided and why, as an SDK's approval flow hands it over. */
export interface ApprovalVerdict {
  readonly approved: boolean;
  /** The person who decided; required, an anonymous decision is refused. */
  readonly by: string;
  readonly reason?: string | undefined;
}

/**
 * The part of a `Ledger` the adapters record decisions with: `ledger.approve` and `ledger.decline`. Structural,
 * so an adapter needs no more of the ledger than these two calls, and a test can hand it the ledger itself.
 */
export interface ApprovalDesk<TDecision = unknown> {
  approve(request: {
    readonly tenant: string;
    readonly tool: string;
    readonly key: string;
    readonly by: string;
    readonly reason?: string;
  }): Promise<TDecision>;
  decline(request: {
    readonly tenant: string;
    readonly tool: string;
    readonly key: string;
    readonly by: string;
    readonly reason: string;
  }): Promise<TDecision>;
}

/** The reason recorded for a decline that came without one: `decline` requires a reason. */
export function declineReason(reason: string | undefined, where: string): string {
  const given = reason?.trim();
  return given ? given : `declined in ${where} without a reason`;
}

/**
 * Records one decision in the ledger, bound to the call's tenant, tool and key. The same answer recorded again
 * (a retried request of the app) is not an error: the decision that stands is answered. Another answer is the
 * ledger's APPROVAL_ALREADY_DECIDED, naming who decided first.
 */
export async function recordDecision<TDecision>(
  desk: ApprovalDesk<TDecision>,
  target: ApprovalTarget,
  verdict: ApprovalVerdict,
  where: string,
): Promise<TDecision> {
  try {
    if (verdict.approved) {
      return await desk.approve({
        ...target,
        by: verdict.by,
        ...(verdict.reason === undefined ? {} : { reason: verdict.reason }),
      });
    }
    return await desk.decline({ ...target, by: verdict.by, reason: declineReason(verdict.reason, where) });
  } catch (error) {
    const standing =
      error instanceof ToolLedgerError && error.code === 'APPROVAL_ALREADY_DECIDED'
        ? error.approval?.decision
        : undefined;
    if (standing !== undefined && standing.decision === (verdict.approved ? 'approved' : 'declined')) {
      return standing as TDecision;
    }
    throw error;
  }
}

/** A decision that could not be bound to a call of a ledger tool: refused before anything reaches the ledger. */
export function unboundDecision(message: string): ToolLedgerError {
  return new ToolLedgerError('INPUT_INVALID', message);
}

/** Whether a ledger tool was declared with `approval` (any value: `'required'` or a function of the input). */
export function hasApproval(tool: AdapterTool): boolean {
  return tool.approval !== undefined && tool.approval !== null;
}

/**
 * What the ledger said when asked to register a call that may need a person's decision, before the SDK's
 * approval has been given:
 * - `awaiting`: the ledger holds the call as awaiting approval (APPROVAL_REQUIRED); the SDK should ask;
 * - `answered`: the ledger answered with a report (no approval needed for this input, or a replay): hand it to
 *   the SDK's execute instead of invoking again;
 * - `refused`: any other ledger error (declined, expired, other arguments, bad input): let the SDK's execute
 *   invoke again, so the model reads the same error.
 */
export type Registration =
  | { readonly kind: 'awaiting' }
  | { readonly kind: 'answered'; readonly report: InvokeReport<unknown> }
  | { readonly kind: 'refused'; readonly error: ToolLedgerError };

/**
 * Registers the call with the ledger when the SDK asks whether it needs approval: the ledger then holds the
 * fingerprint of the arguments the model sent, so no later answer can approve other arguments. A report is
 * kept (see `Registration`), so a call that needs no approval runs once.
 */
export async function registerCall(
  tool: AdapterTool,
  input: unknown,
  context: CallContext,
): Promise<Registration> {
  try {
    const report = await tool.invoke(input, context);
    return { kind: 'answered', report };
  } catch (error) {
    if (!(error instanceof ToolLedgerError)) throw error;
    if (error.code === 'APPROVAL_REQUIRED') return { kind: 'awaiting' };
    return { kind: 'refused', error };
  }
}

/**
 * Reports of calls the approval check already ran, by key, each taken once by execute. Bounded: past `limit`
 * the oldest is dropped, and its execute asks the ledger again, which replays it.
 */
export class HeldReports {
  readonly #reports = new Map<string, InvokeReport<unknown>>();
  constructor(readonly limit = 1024) {}

  set(key: string, report: InvokeReport<unknown>): void {
    this.#reports.set(key, report);
    if (this.#reports.size > this.limit) {
      const oldest = this.#reports.keys().next().value;
      if (oldest !== undefined) this.#reports.delete(oldest);
    }
  }

  take(key: string | undefined): InvokeReport<unknown> | undefined {
    if (key === undefined) return undefined;
    const report = this.#reports.get(key);
    this.#reports.delete(key);
    return report;
  }
}
