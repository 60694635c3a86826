import type { ApprovalDecision } from './approval.js';

/**
 * Stable error codes. Callers (and LLMs reading tool results) branch on these, so they never change meaning.
 */
export const ErrorCode = {
  KEY_REQUIRED: 'KEY_REQUIRED',
  KEY_INVALID: 'KEY_INVALID',
  CONTEXT_INVALID: 'CONTEXT_INVALID',
  INPUT_INVALID: 'INPUT_INVALID',
  KEY_REUSED: 'KEY_REUSED',
  IN_PROGRESS: 'IN_PROGRESS',
  LEDGER_UNAVAILABLE: 'LEDGER_UNAVAILABLE',
  LEASE_LOST: 'LEASE_LOST',
  RESULT_INVALID: 'RESULT_INVALID',
  TOOL_FAILED: 'TOOL_FAILED',
  CONFIG_INVALID: 'CONFIG_INVALID',
  LEDGER_CLOSED: 'LEDGER_CLOSED',
  OUTCOME_UNKNOWN: 'OUTCOME_UNKNOWN',
  ACCESS_DENIED: 'ACCESS_DENIED',
  RATE_LIMITED: 'RATE_LIMITED',
  APPROVAL_REQUIRED: 'APPROVAL_REQUIRED',
  APPROVAL_DECLINED: 'APPROVAL_DECLINED',
  APPROVAL_EXPIRED: 'APPROVAL_EXPIRED',
  APPROVAL_NOT_PENDING: 'APPROVAL_NOT_PENDING',
  APPROVAL_ALREADY_DECIDED: 'APPROVAL_ALREADY_DECIDED',
  APPROVAL_ACTOR_REQUIRED: 'APPROVAL_ACTOR_REQUIRED',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const RETRYABLE: Readonly<Record<ErrorCode, boolean>> = {
  KEY_REQUIRED: false,
  KEY_INVALID: false,
  CONTEXT_INVALID: false,
  INPUT_INVALID: false,
  KEY_REUSED: false,
  IN_PROGRESS: true,
  LEDGER_UNAVAILABLE: true,
  LEASE_LOST: true,
  RESULT_INVALID: false,
  TOOL_FAILED: false,
  CONFIG_INVALID: false,
  LEDGER_CLOSED: false,
  OUTCOME_UNKNOWN: false,
  ACCESS_DENIED: false,
  RATE_LIMITED: true,
  // A person has not decided yet: the same call, later (or after approvalWaitSeconds), gets the decision.
  APPROVAL_REQUIRED: true,
  APPROVAL_DECLINED: false,
  APPROVAL_EXPIRED: false,
  APPROVAL_NOT_PENDING: false,
  APPROVAL_ALREADY_DECIDED: false,
  APPROVAL_ACTOR_REQUIRED: false,
};

/**
 * What an approval error says about the call it names: the key's parts, and for a decided one the decision (the
 * winner's, for `APPROVAL_ALREADY_DECIDED`; the decline, for `APPROVAL_DECLINED`).
 */
export interface ApprovalErrorDetail {
  readonly tenant: string;
  readonly tool: string;
  readonly key: string;
  /** The run's status when it awaits no decision (`APPROVAL_NOT_PENDING`), `'none'` when the key has no run. */
  readonly status?: string;
  readonly decision?: ApprovalDecision;
  /** Until when a person may decide (`APPROVAL_REQUIRED`), or when that ended (`APPROVAL_EXPIRED`). */
  readonly deadline?: Date;
}

/** Why a same-key call was refused as a caller bug. */
export type ConflictReason = 'params_mismatch' | 'user_mismatch';

/** One issue reported by input validation. */
export interface ValidationIssue {
  readonly message: string;
  readonly path?: readonly string[];
}

export interface ToolLedgerErrorOptions {
  readonly cause?: unknown;
  /** Overrides the code's default. */
  readonly retryable?: boolean;
  /** For `IN_PROGRESS`: when a retry is likely to find the first execution finished. */
  readonly retryAfterMs?: number;
  readonly conflictReason?: ConflictReason;
  readonly issues?: readonly ValidationIssue[];
  readonly approval?: ApprovalErrorDetail;
}

/**
 * The one error family of tool-ledger. `code` is stable; `message` says what to do next.
 */
export class ToolLedgerError extends Error {
  override readonly name: string = 'ToolLedgerError';
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly conflictReason: ConflictReason | undefined;
  readonly issues: readonly ValidationIssue[] | undefined;
  /** For the `APPROVAL_*` codes: which call, and the decision when there is one. */
  readonly approval: ApprovalErrorDetail | undefined;

  constructor(code: ErrorCode, message: string, options: ToolLedgerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? RETRYABLE[code];
    this.retryAfterMs = options.retryAfterMs;
    this.conflictReason = options.conflictReason;
    this.issues = options.issues;
    this.approval = options.approval;
  }

  /** A plain, JSON-safe view for tool results and logs. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      retryable: this.retryable,
      ...(this.retryAfterMs === undefined ? {} : { retryAfterMs: this.retryAfterMs }),
      ...(this.conflictReason === undefined ? {} : { conflictReason: this.conflictReason }),
      ...(this.issues === undefined ? {} : { issues: this.issues }),
      ...(this.approval === undefined ? {} : { approval: this.approval }),
    };
  }
}

export interface ToolFailureOptions {
  /**
   * A final failure is stored and replayed as the same error; the key is spent.
   * A non-final failure leaves the key retryable.
   * @default true
   */
  readonly final?: boolean;
  /** A stable, machine-readable reason such as `card_declined`. */
  readonly reason?: string;
  /** JSON details stored with the failure and replayed with it. */
  readonly details?: unknown;
  readonly cause?: unknown;
}

/**
 * Thrown by a handler to report a business failure. Final by default: the failure is stored and every retry
 * of the same key gets the same `ToolFailure` back, without running the handler again.
 */
export class ToolFailure extends ToolLedgerError {
  override readonly name: string = 'ToolFailure';
  readonly final: boolean;
  readonly reason: string | undefined;
  readonly details: unknown;
  /** True when this error was read back from the ledger rather than thrown by the handler just now. */
  readonly replayed: boolean;

  constructor(message: string, options: ToolFailureOptions & { replayed?: boolean } = {}) {
    const final = options.final ?? true;
    super(ErrorCode.TOOL_FAILED, message, { cause: options.cause, retryable: !final });
    this.final = final;
    this.reason = options.reason;
    this.details = options.details;
    this.replayed = options.replayed ?? false;
  }

  override toJSON(): Record<string, unknown> {
    return {
      ...super.toJSON(),
      final: this.final,
      ...(this.reason === undefined ? {} : { reason: this.reason }),
      ...(this.details === undefined ? {} : { details: this.details }),
    };
  }
}

/**
 * Thrown by a handler or a step to say that its effect may or may not have happened: the request left, and no
 * answer came back (the connection died after sending, a provider timed out). The ledger does not guess: the
 * tool's or step's `onUnknown` rule decides at once, as it would for an attempt that crashed mid-effect. With
 * `'fail'` the call ends with this code and the row waits for an operator (`tool-ledger resolve`).
 */
export class OutcomeUnknownError extends ToolLedgerError {
  override readonly name: string = 'OutcomeUnknownError';

  constructor(message: string, options: { readonly cause?: unknown } = {}) {
    super(ErrorCode.OUTCOME_UNKNOWN, message, { cause: options.cause, retryable: false });
  }
}

export function isToolLedgerError(value: unknown): value is ToolLedgerError {
  return value instanceof ToolLedgerError;
}
