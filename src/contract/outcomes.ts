/**
 * The one list of outcomes a call can end in. The `Outcome` type, log severities, the calls metric's description,
 * adapter texts and the docs tables all derive from it, so a new outcome is a compile error everywhere it is not
 * handled yet.
 */
export const OUTCOMES = [
  'executed',
  'replayed',
  'polled',
  'failed',
  'conflict',
  'in_progress',
  'rejected',
  'unknown',
  'approval_required',
  'approved',
  'declined',
  'expired',
] as const;

/** Every decision a call can end in. Shared by reports, spans, logs and metrics. */
export type Outcome = (typeof OUTCOMES)[number];

/** Why a call was refused before it reached the ledger. */
export const REJECTED_REASONS = ['key_required', 'key_invalid', 'context_invalid', 'input_invalid'] as const;
export type RejectedReason = (typeof REJECTED_REASONS)[number];

export type OutcomeSeverity = 'INFO' | 'WARN' | 'ERROR';

export interface OutcomeInfo {
  /** Counts as success in spans and alerts: the call got its answer (a replayed final failure included). */
  readonly success: boolean;
  /** The handler ran in this call (its run time is recorded). */
  readonly ranHandler: boolean;
  /** Log severity of the decision record. */
  readonly severity: OutcomeSeverity;
  /** One line for metric descriptions, docs and adapters. */
  readonly text: string;
}

export const OUTCOME_INFO = {
  executed: {
    success: true,
    ranHandler: true,
    severity: 'INFO',
    text: 'the handler ran and its result was saved',
  },
  replayed: {
    success: true,
    ranHandler: false,
    severity: 'INFO',
    text: 'the saved result (or final failure) of an earlier call with this key was returned',
  },
  polled: {
    success: true,
    ranHandler: false,
    severity: 'INFO',
    text: 'a retry of a job that is still running (or abandoned) reported its status',
  },
  failed: { success: false, ranHandler: true, severity: 'ERROR', text: 'the handler or the ledger failed' },
  conflict: {
    success: false,
    ranHandler: false,
    severity: 'WARN',
    text: 'the key was already used with different arguments or by another user',
  },
  in_progress: {
    success: false,
    ranHandler: false,
    severity: 'WARN',
    text: 'the first call with this key was still running when waiting ended',
  },
  rejected: {
    success: false,
    ranHandler: false,
    severity: 'WARN',
    text: 'refused before the ledger was touched (missing or invalid key, context or input)',
  },
  unknown: {
    success: false,
    ranHandler: false,
    severity: 'ERROR',
    text: 'an earlier attempt was interrupted mid-effect and its outcome is unknown; an operator settles it',
  },
  approval_required: {
    success: false,
    ranHandler: false,
    severity: 'INFO',
    text: "the call needs a person's approval, which has not been given yet: nothing ran",
  },
  approved: {
    success: true,
    ranHandler: true,
    severity: 'INFO',
    text: 'the handler ran once a person approved the call (with the approved arguments), and its result was saved',
  },
  declined: {
    success: false,
    ranHandler: false,
    severity: 'WARN',
    text: 'a person declined the call: nothing ran, and every call with this key gets the decline',
  },
  expired: {
    success: false,
    ranHandler: false,
    severity: 'WARN',
    text: 'nobody decided on the call before its approval deadline: nothing ran',
  },
} as const satisfies Record<Outcome, OutcomeInfo>;

/** The outcomes `invoke` reports (the others end in a thrown error). */
export type SuccessOutcome = {
  [K in Outcome]: (typeof OUTCOME_INFO)[K]['success'] extends true ? K : never;
}[Outcome];

export const isSuccessOutcome = (outcome: Outcome): outcome is SuccessOutcome =>
  OUTCOME_INFO[outcome].success;
