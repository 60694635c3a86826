import type { CallScope } from '../contract/observer.js';
import type {
  CallContext,
  HandlerContext,
  UnknownOutcomeRule,
  UnknownRunContext,
} from '../contract/types.js';
import type { ClaimRow } from '../ledger/run-row.js';
import type { ClaimRequest } from '../ledger/store.js';
import type { CallFacts } from './facts.js';
import type { LedgerRuntime } from './runtime.js';
import type { Waiter } from './wait.js';

/** One call going through the ledger. */
export interface ClaimCall {
  readonly request: ClaimRequest;
  /** The validated input. */
  readonly input: unknown;
  readonly context: CallContext;
  readonly scope: CallScope;
  readonly facts: CallFacts;
  readonly waiter: Waiter;
}

/** What the executor of one tool needs, resolved once per tool. */
export interface ExecutorSettings {
  readonly runtime: LedgerRuntime;
  readonly name: string;
  readonly handler: (input: unknown, ctx: HandlerContext) => unknown;
  readonly transactional: boolean;
  readonly isFinalError: (error: unknown) => boolean;
  readonly onUnknown: UnknownOutcomeRule<UnknownRunContext, unknown>;
  readonly leaseSeconds: number;
  readonly ttlSeconds: number;
  /** How long a later attempt here waits for a step an earlier attempt of this process is still running. */
  readonly waitMs: number;
}

/** How an execution ended, as the caller sees it. */
export type Executed =
  | {
      readonly outcome: 'executed' | 'replayed';
      readonly value: unknown;
      readonly completedAt: Date;
    }
  | { readonly outcome: 'failed' | 'unknown'; readonly error: unknown };

/** Runs the handler for the claim `row` that `call` won. */
export type Execute = (row: ClaimRow, call: ClaimCall) => Promise<Executed>;

/** One attempt's facts, as the runners of the handler need them. */
export interface Attempt {
  readonly row: ClaimRow;
  readonly input: unknown;
  readonly unknown: UnknownRunContext;
  readonly scope: CallScope;
  readonly facts: CallFacts;
  readonly started: number;
}
