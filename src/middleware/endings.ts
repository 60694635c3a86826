/**
 * How an execution can end, and what each ending means, in one table: what the ledger saves, what happens when
 * that save fails, what the caller gets, and what telemetry says. The executor only classifies an ending; every
 * consequence is read from here, so a new ending that is not decided is a compile error.
 */

/** Every way one execution of a handler can end. */
export const ENDINGS = [
  /** The handler returned a JSON result (autocommit mode): the completion saves it. */
  'succeeded',
  /** The handler returned and its transaction committed the completion with its writes. */
  'committed',
  /** An earlier attempt's outcome was unknown and the tool's lookup found the result (or this process held it). */
  'recovered',
  /** The handler threw: final or retryable as `isFinalError` / `ToolFailure.final` decide. */
  'handler_threw',
  /** The handler ran but returned a value that is not JSON: its effect happened, so the key is spent. */
  'result_not_json',
  /** An interrupted effect whose rule is `'fail'`: the row waits for an operator. */
  'outcome_unknown',
  /** The fence refused a write: another caller took the key over after this lease lapsed. */
  'lease_lost',
  /** Transactional: the handler threw and its writes were rolled back. */
  'tx_handler_threw',
  /** Transactional: the result was not JSON, so the transaction was rolled back before completing. */
  'tx_result_not_json',
  /** Transactional: the database failed under the transaction (its writes are gone with it). */
  'tx_driver_failed',
] as const;

export type EndingKind = (typeof ENDINGS)[number];

/**
 * What the ledger writes for an ending:
 * - `result`: the success (a completion with the result);
 * - `failure`: a failed completion, final as the ending's `final` says;
 * - `unknown`: status `unknown`, with the error;
 * - `nothing`: already written (`committed`), or not ours to write (`lease_lost`).
 */
export type Save = 'result' | 'failure' | 'unknown' | 'nothing';

/** When the save fails: keep the completion in this process and save it later, or give up on it. */
export type IfSaveFails = 'keep_and_report' | 'keep_quietly' | 'not_applicable';

/** What the caller gets. */
export type CallerGets = 'value' | 'the_error';

export interface EndingRule {
  readonly save: Save;
  /** For `failure`: whether the saved failure is final (`verdict`: the handler's error decides). */
  readonly final: boolean | 'verdict';
  readonly ifSaveFails: IfSaveFails;
  readonly answer: CallerGets;
  /** The call's outcome in telemetry, and whether the tool's own answer is an error. */
  readonly outcome: 'executed' | 'replayed' | 'failed' | 'unknown';
  readonly toolError: boolean;
}

export const ENDING_RULES = {
  succeeded: {
    save: 'result',
    final: false,
    // The effect happened: losing the result is the costly path, so it is kept and the caller told to retry.
    ifSaveFails: 'keep_and_report',
    answer: 'value',
    outcome: 'executed',
    toolError: false,
  },
  committed: {
    save: 'nothing',
    final: false,
    ifSaveFails: 'not_applicable',
    answer: 'value',
    outcome: 'executed',
    toolError: false,
  },
  recovered: {
    save: 'result',
    final: false,
    ifSaveFails: 'keep_and_report',
    answer: 'value',
    outcome: 'replayed',
    toolError: false,
  },
  handler_threw: {
    save: 'failure',
    final: 'verdict',
    // The caller gets the handler's own error either way; keeping the failure stops a final one being retried.
    ifSaveFails: 'keep_quietly',
    answer: 'the_error',
    outcome: 'failed',
    toolError: true,
  },
  result_not_json: {
    save: 'failure',
    final: true,
    ifSaveFails: 'keep_quietly',
    answer: 'the_error',
    outcome: 'failed',
    toolError: false,
  },
  outcome_unknown: {
    save: 'unknown',
    final: true,
    ifSaveFails: 'keep_quietly',
    answer: 'the_error',
    outcome: 'unknown',
    toolError: false,
  },
  lease_lost: {
    save: 'nothing',
    final: false,
    ifSaveFails: 'not_applicable',
    answer: 'the_error',
    outcome: 'failed',
    toolError: false,
  },
  tx_handler_threw: {
    save: 'failure',
    final: 'verdict',
    ifSaveFails: 'keep_quietly',
    answer: 'the_error',
    outcome: 'failed',
    toolError: true,
  },
  tx_result_not_json: {
    // Rolled back before anything committed: the key stays retryable.
    save: 'failure',
    final: false,
    ifSaveFails: 'keep_quietly',
    answer: 'the_error',
    outcome: 'failed',
    toolError: false,
  },
  tx_driver_failed: {
    save: 'failure',
    final: false,
    ifSaveFails: 'keep_quietly',
    answer: 'the_error',
    outcome: 'failed',
    toolError: false,
  },
} as const satisfies Record<EndingKind, EndingRule>;

/** An ending as the attempt classified it: the kind decides everything else (see `ENDING_RULES`). */
export interface Ending {
  readonly kind: EndingKind;
  /** The result's JSON text, for endings that save or return a value. */
  readonly text?: string;
  /** For `committed`: the completion time the transaction returned. */
  readonly completedAt?: Date;
  /** The error the caller gets, for endings that answer with one. */
  readonly error?: unknown;
  /** For `handler_threw`: whether the handler's error is final. */
  readonly final?: boolean;
}
