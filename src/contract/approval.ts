/**
 * Approvals (docs/ledger.md, "Approvals"): a person says yes to one call's exact arguments, once, and the ledger
 * holds them to it. The public shapes of the option, the decisions and the inbox.
 */

/** Who is calling a tool that may need an approval, as the `approval` rule sees it. */
export interface ApprovalContext {
  readonly tool: string;
  readonly tenant: string;
  readonly key: string;
  readonly user: string | undefined;
  readonly toolCallId: string | undefined;
}

/**
 * Whether a call needs a person's approval before its handler runs: `'required'` for every call, or a function of
 * the validated input and the caller that answers per call (for example amounts over a limit). Asked once per
 * intent, on the call that finds the key new; never again for that key while it is remembered.
 */
export type ApprovalRule<TInput = unknown> =
  | 'required'
  | ((input: TInput, ctx: ApprovalContext) => boolean | Promise<boolean>);

/** The decisions a person can take on a call awaiting approval. */
export type ApprovalVerdict = 'approved' | 'declined';

/** A recorded decision, as `approve`/`decline` return it and the error of a race's loser names it. */
export interface ApprovalDecision {
  readonly decision: ApprovalVerdict;
  /** Who decided: required, never anonymous. */
  readonly by: string;
  /** When, by the database clock. */
  readonly at: Date;
  readonly reason?: string | undefined;
  /** The parameter hash of the call as it was made: the intent the decision is bound to. */
  readonly fingerprint: string;
  /** For an approval: the parameter hash of what runs (the edited arguments' when the approver edited them). */
  readonly approvedFingerprint?: string | undefined;
  /** Whether the approver replaced the arguments (`approve({ arguments })`). */
  readonly edited?: boolean | undefined;
}

/** Names one call awaiting a decision: the key's three parts. */
export interface ApprovalTarget {
  /** @default 'default' */
  readonly tenant?: string;
  readonly tool: string;
  readonly key: string;
}

/** `ledger.approve(...)`. */
export interface ApproveRequest extends ApprovalTarget {
  /** Who approves (a user id, an e-mail): required and recorded in the audit chain. */
  readonly by: string;
  readonly reason?: string;
  /**
   * The approver's edit: the handler runs with these arguments instead of the caller's (validated by the tool's
   * input schema when the tool is registered on this ledger, else when it runs). The call's own fingerprint still
   * names the intent; both are recorded. For corrections a person makes while reviewing (a wrong amount, a typo
   * in an address), not for a different action: that is a new call with a new key.
   */
  readonly arguments?: unknown;
}

/** `ledger.decline(...)`: the reason is required, since every later call with the key reads it. */
export interface DeclineRequest extends ApprovalTarget {
  readonly by: string;
  readonly reason: string;
}

/** One call awaiting a decision, as the inbox lists it. */
export interface AwaitingApproval {
  readonly tenant: string;
  readonly tool: string;
  readonly key: string;
  readonly user: string | undefined;
  readonly fingerprint: string;
  /**
   * The arguments as the call sent them (validated). Raw: scrub them before showing them anywhere personal data
   * must not go (the CLI and the console scrub).
   */
  readonly arguments: unknown;
  readonly requestedAt: Date;
  readonly deadline: Date;
  /** The run's id in `tool_runs`, for support. */
  readonly runId: string;
}

/** `ledger.approvals.list(...)`. */
export interface ListApprovalsOptions {
  readonly tenant?: string;
  readonly tool?: string;
  /**
   * At most this many, oldest first.
   * @default 100
   */
  readonly limit?: number;
}
