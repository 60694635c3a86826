import { ToolLedgerError } from '../contract/errors.js';
import type { CallScope, SpanRef } from '../contract/observer.js';
import type { CallContext, ToolKind } from '../contract/types.js';
import { isOutcomeUnknown } from '../ledger/errors.js';
import type { ClaimRow } from '../ledger/run-row.js';
import { type ClaimRequest, fenceOf } from '../ledger/store.js';
import type { Answer, CallEnd } from './call-end.js';
import { judgeClaim, type VerdictKind, type VerdictOf } from './decide.js';
import type { Execute } from './execute.js';
import type { CallFacts } from './facts.js';
import { replayedFailure } from './failures.js';
import { jobStatusOf, runningJobStatus } from './job-status.js';
import { LostClaims } from './lost-claims.js';
import type { LedgerRuntime } from './runtime.js';
import { retryAfterMs, type Waiter } from './wait.js';

const MAX_RACE_RETRIES = 50;

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

/** What every handler of one tool shares. */
export interface ClaimSettings {
  readonly name: string;
  readonly runtime: LedgerRuntime;
  readonly execute: Execute;
}

/** How the loop goes on after a verdict: the call ends, or it claims again after a race or a wait. */
type Next = CallEnd | 'race' | 'wait';
type Handler<K extends VerdictKind> = (verdict: VerdictOf<K>, call: ClaimCall) => Next | Promise<Next>;
/** One handler per verdict: a verdict without one is a compile error. */
type HandlerTable = { readonly [K in VerdictKind]: Handler<K> };

/** Whether the verdict's row is an earlier execution this call's span links to. */
const LINKS_ORIGINAL = {
  won: false,
  replay: true,
  final_failure: true,
  conflict: true,
  running: true,
  abandoned: true,
  reclaimed: false,
  raced: false,
  unknown: true,
} as const satisfies Record<VerdictKind, boolean>;

export function spanOf(row: ClaimRow): SpanRef | undefined {
  return row.trace_id && row.span_id ? { traceId: row.trace_id, spanId: row.span_id } : undefined;
}

const answer = (
  outcome: Answer['outcome'],
  value: unknown,
  row: ClaimRow,
  call: ClaimCall,
  completedAt: Date | undefined = row.completed_at ?? undefined,
): Answer => ({ outcome, value, paramsHash: call.request.paramsHash, completedAt, row });

/** The handlers both kinds share. */
function sharedHandlers({ name, runtime }: ClaimSettings) {
  const conflict: Handler<'conflict'> = async ({ row, reason }) => {
    await runtime.store.recordConflict(row.runKey).catch(() => {});
    return {
      outcome: 'conflict',
      conflictReason: reason,
      error: new ToolLedgerError(
        'KEY_REUSED',
        reason === 'params_mismatch'
          ? `This idempotency key was already used for tool "${name}" with different arguments. Use a new key for a new or changed request; reuse a key only to retry the exact same request.`
          : `This idempotency key was already used for tool "${name}" by a different user. Keys must be unique per intent; generate a new key.`,
        { conflictReason: reason },
      ),
    };
  };
  const raced: Handler<'raced'> = () => 'race';
  // The lease was set when the lost claim ran and may be about to lapse: renew it before acting on it.
  const reclaim = async (row: ClaimRow, call: ClaimCall) =>
    runtime.store.renewLease(fenceOf(row), call.request.leaseSeconds);
  return { conflict, raced, reclaim };
}

function mutationHandlers(settings: ClaimSettings): HandlerTable {
  const { name, execute } = settings;
  const { reclaim, ...shared } = sharedHandlers(settings);
  const won: Handler<'won'> = ({ row }, call) =>
    execute(row, call.input, call.context, call.request.tenant, call.scope, call.facts).then(
      (done): CallEnd =>
        'error' in done
          ? { outcome: done.outcome, error: done.error }
          : answer(done.outcome, done.value, row, call, done.completedAt),
    );
  return {
    ...shared,
    won,
    reclaimed: async ({ row }, call) =>
      (await reclaim(row, call)) ? won({ kind: 'won', row }, call) : 'race',
    replay: ({ row }, call) => answer('replayed', row.result_json, row, call),
    final_failure: ({ row }, call) => {
      call.facts.toolError = true;
      return { outcome: 'replayed', error: replayedFailure(row.error_json!) };
    },
    unknown: ({ row }) => ({ outcome: 'unknown', error: unknownOutcome(name, row) }),
    running: async ({ row }, call) => {
      if (await call.waiter.waitFor(row)) return 'wait';
      call.facts.waitedMs = call.waiter.elapsedMs();
      return {
        outcome: 'in_progress',
        error: new ToolLedgerError(
          'IN_PROGRESS',
          `Tool "${name}" is still running the first call with this idempotency key. Retry with the same key in a moment to get its result; do not use a new key, or the action may run twice.`,
          { retryAfterMs: retryAfterMs(row) },
        ),
      };
    },
    // A mutation always takes a lapsed lease over, so the claim never leaves one abandoned; claim again if it did.
    abandoned: () => 'race',
  };
}

function jobHandlers(settings: ClaimSettings): HandlerTable {
  const { runtime, execute } = settings;
  const { reclaim, ...shared } = sharedHandlers(settings);
  const finished: Handler<'replay' | 'final_failure'> = ({ row }, call) =>
    answer('replayed', jobStatusOf(row), row, call);
  // A job not finished yet has no saved answer to replay: the call only reports its status.
  const unfinished: Handler<'running' | 'abandoned'> = ({ row }, call) =>
    answer('polled', jobStatusOf(row), row, call);
  const won: Handler<'won'> = ({ row }, call) => {
    const work = execute(row, call.input, call.context, call.request.tenant, call.scope, call.facts);
    void runtime.track(work.catch(() => {}));
    // The run this call just started: running, whatever the claim's row said.
    return answer('executed', runningJobStatus(row, true), row, call);
  };
  return {
    ...shared,
    won,
    reclaimed: async ({ row }, call) =>
      (await reclaim(row, call)) ? won({ kind: 'won', row }, call) : 'race',
    replay: finished,
    final_failure: finished,
    running: unfinished,
    abandoned: unfinished,
    unknown: ({ row }, call) => answer('polled', jobStatusOf(row), row, call),
  };
}

/** The answer for a run marked unknown: final until an operator settles it. */
function unknownOutcome(name: string, row: ClaimRow): ToolLedgerError {
  const why = row.error_json?.message;
  return new ToolLedgerError(
    'OUTCOME_UNKNOWN',
    `Tool "${name}": an earlier attempt with this idempotency key was interrupted mid-effect, so whether it took effect is unknown, and nothing is repeated until an operator settles it (tool-ledger list --status unknown, then tool-ledger resolve). Do not retry with a new key, or the action may happen twice.${why ? ` Recorded: ${why}` : ''}`,
    { retryable: false },
  );
}

function heldNotSaved(name: string, error: unknown): ToolLedgerError {
  const detail =
    error instanceof ToolLedgerError && error.cause instanceof Error ? error.cause.message : String(error);
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `Tool "${name}": this process holds the outcome of an earlier call with this key and could not save it yet (${detail}). Nothing runs again; retry with the same key once the database answers.`,
    { cause: error, retryable: true },
  );
}

/** The claim loop of one tool: claim, judge, and hand the verdict to its kind's handler until the call ends. */
export function createClaimLoop(
  kind: Exclude<ToolKind, 'read'>,
  settings: ClaimSettings,
): (call: ClaimCall) => Promise<CallEnd> {
  const table = kind === 'job' ? jobHandlers(settings) : mutationHandlers(settings);
  const dispatch = <K extends VerdictKind>(verdict: VerdictOf<K>, call: ClaimCall) =>
    table[verdict.kind](verdict, call);
  const contention = (): CallEnd => ({
    outcome: 'failed',
    error: new ToolLedgerError(
      'LEDGER_UNAVAILABLE',
      `Tool "${settings.name}": the key kept changing under concurrent claims. Retry the call with the same key.`,
    ),
  });

  return async (call) => {
    const { facts, waiter, scope, request } = call;
    for (let races = 0; ; ) {
      waiter.beforeClaim();
      // An outcome of this key this process holds (kept, or its first save still in flight) must land before the
      // claim could take the key over: this process never runs a handler whose result it already has.
      if (settings.runtime.saves.holding > 0) {
        await settings.runtime.saves
          .flush(LostClaims.key(request.tenant, request.tool, request.key))
          .catch((error: unknown) => {
            throw heldNotSaved(settings.name, error);
          });
      }
      const row = await settings.runtime.store.claim(request, scope.recordLedgerOperation).catch((error) => {
        // The statement may have committed: keep the token so a retry from here can take the row back.
        if (isOutcomeUnknown(error)) {
          settings.runtime.lostClaims.remember(
            LostClaims.key(request.tenant, request.tool, request.key),
            request.leaseOwner,
            request.leaseSeconds,
          );
        }
        throw error;
      });
      if (row) {
        facts.attempt = row.attempt;
        if (row.job_id) facts.jobId = row.job_id;
      }
      const verdict = judgeClaim(row, request);
      facts.original = LINKS_ORIGINAL[verdict.kind] && row ? spanOf(row) : undefined;
      // Before the handler runs: a won claim's wait must not include the execution.
      facts.waitedMs = waiter.waitedMs;
      const next = await dispatch(verdict, call);
      if (next === 'race') {
        if (++races > MAX_RACE_RETRIES) return contention();
        waiter.noteRetry();
        continue;
      }
      if (next === 'wait') continue;
      return next;
    }
  };
}
