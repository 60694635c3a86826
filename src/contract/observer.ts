import type { ConflictReason } from './errors.js';
import type { Outcome, RejectedReason, ToolKind } from './types.js';

/**
 * The seam between the middleware and telemetry. The middleware reports facts; the telemetry layer turns them
 * into spans, logs and metrics. Neither side knows how the other works. Internal: not exported from the package.
 */
export interface CallObserver {
  startCall(start: CallStart): CallScope;
  /** Outcomes kept in memory because their completion failed, saved later: +1 kept, -1 saved or dropped. */
  unsavedResults?(tool: string, delta: number): void;
  /**
   * Registers the ledger's count of calls awaiting approval, read at each metric collection (the gauges
   * `tool_ledger.approvals.waiting` and `tool_ledger.approvals.oldest_age`). Returns the unregistration, called
   * when the ledger closes. The ledger calls it only once some tool has `approval`.
   */
  approvalsWaiting?(source: ApprovalsWaitingSource): () => void;
}

/** One group of calls awaiting approval: a tenant the observer asked for by name, or every other tenant. */
export interface ApprovalsWaitingGroup {
  /** The tenant, when it is one of the tenants asked for; undefined for the rest together. */
  readonly tenant: string | undefined;
  readonly waiting: number;
  /** How long the oldest call of the group has waited for a decision, in seconds; 0 when none waits. */
  readonly oldestSeconds: number;
}

/** Where the approval gauges read from: the ledger's schema, and one count by group per collection. */
export interface ApprovalsWaitingSource {
  readonly schema: string;
  /**
   * The calls awaiting a decision now (deadline not passed), grouped by `tenants` (those named apart, the rest in
   * one group). Bounded: at most `tenants.length + 1` groups.
   */
  read(tenants: readonly string[]): Promise<readonly ApprovalsWaitingGroup[]>;
}

export interface CallStart {
  readonly tool: string;
  readonly kind: ToolKind;
  readonly tenant: string;
  readonly key: string | undefined;
  readonly user: string | undefined;
  readonly toolCallId: string | undefined;
  /** The tool's description, as its author wrote it. */
  readonly description?: string | undefined;
  /** The raw arguments, only for content capture; the observer must scrub them. */
  readonly input: unknown;
}

export type LedgerOperation = 'claim' | 'complete' | 'lookup';

export interface SpanRef {
  readonly traceId: string;
  readonly spanId: string;
}

export interface CallScope {
  /** Runs `fn` with the call's span as the active context (so handler and SQL spans nest under it). */
  run<T>(fn: () => T): T;
  /** The call span's ids, stored in the ledger row so later replays can link to it. */
  readonly spanRef: SpanRef | undefined;
  /** The parameter hash, once validation has passed. */
  setParamsHash(hash: string): void;
  /** A ledger statement finished; `seconds` is its client-side duration. */
  recordLedgerOperation(operation: LedgerOperation, seconds: number): void;
  /** The handler starts or stops running in this process (in-flight gauge). */
  handlerStarted(): void;
  handlerFinished(): void;
  /** A recorded step starts (`ctx.step`); its scope is ended exactly once with how the step went. */
  startStep(name: string): StepScope;
  /** Exactly one decision ends every call. */
  end(decision: Decision): void;
}

/**
 * How one step ended: `executed` (its function ran and the result was saved), `replayed` (an earlier attempt's
 * saved result), `looked_up` (its outcome was unknown and the lookup found it), `unknown` (its outcome was
 * unknown and the rule was `'fail'`), `failed` (its function threw, or saving its result failed).
 */
export const STEP_OUTCOMES = ['executed', 'replayed', 'looked_up', 'unknown', 'failed'] as const;
export type StepOutcome = (typeof STEP_OUTCOMES)[number];

export interface StepScope {
  /** Runs `fn` with the step's span as the active context. */
  run<T>(fn: () => T): T;
  end(outcome: StepOutcome, error?: unknown, result?: unknown): void;
}

export const NOOP_STEP_SCOPE: StepScope = { run: (fn) => fn(), end: () => {} };

export interface Decision {
  readonly outcome: Outcome;
  readonly attempt?: number | undefined;
  /** How long this call waited for a parallel duplicate. */
  readonly waitedMs?: number | undefined;
  /** Handler run time, for `executed` (and `failed`) calls that ran the handler. */
  readonly executionSeconds?: number | undefined;
  readonly conflictReason?: ConflictReason | undefined;
  readonly rejectedReason?: RejectedReason | undefined;
  readonly jobId?: string | undefined;
  /** The error the call ends with, for every outcome but `executed` and `replayed`. */
  readonly error?: unknown;
  /** The value returned to the caller, only for content capture; the observer must scrub it. */
  readonly result?: unknown;
  /** The original execution, for `replayed`, `in_progress` and `conflict`. */
  readonly original?: SpanRef | undefined;
  /** The tool's own answer is an error (its handler threw, or a stored final failure is replayed). */
  readonly toolError?: boolean | undefined;
}

/** The scope of a call nobody observes (telemetry off). */
export const NOOP_SCOPE: CallScope = {
  run: (fn) => fn(),
  spanRef: undefined,
  setParamsHash: () => {},
  recordLedgerOperation: () => {},
  handlerStarted: () => {},
  handlerFinished: () => {},
  startStep: () => NOOP_STEP_SCOPE,
  end: () => {},
};

export const noopObserver: CallObserver = { startCall: () => NOOP_SCOPE };
