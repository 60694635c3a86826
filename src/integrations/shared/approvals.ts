import { ToolLedgerError } from '../../contract/errors.js';

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
