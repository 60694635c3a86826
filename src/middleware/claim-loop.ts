import type { SpanRef } from '../contract/observer.js';
import type { ToolKind } from '../contract/types.js';
import { isOutcomeUnknown } from '../ledger/driver-errors.js';
import { fenceOf } from '../ledger/fence.js';
import type { ClaimRow } from '../ledger/run-row.js';
import { type ApprovalSettings, approvalHandlers, type RunWon } from './approval-gate.js';
import type { Answer, CallEnd } from './call-end.js';
import type { ClaimCall, Execute } from './execution.js';
import { replayedFailure } from './failures.js';
import { jobStatusOf, runningJobStatus } from './job-status.js';
import { LostClaims } from './lost-claims.js';
import { contention, heldNotSaved, inProgress, keyReused, unknownOutcome } from './messages.js';
import type { LedgerRuntime } from './runtime.js';
import { judgeClaim, type VerdictKind, type VerdictOf } from './verdict.js';
import type { Handler, HandlerTable } from './verdict-handler.js';
import { retryAfterMs } from './wait.js';

const MAX_RACE_RETRIES = 50;

/** What every handler of one tool shares. */
export interface ClaimSettings {
  readonly name: string;
  readonly runtime: LedgerRuntime;
  readonly execute: Execute;
  /** The tool's approval settings (its rule undefined without one). */
  readonly approval: ApprovalSettings;
}

export type { HandlerTable, Next } from './verdict-handler.js';

/** The verdict table of a tool's kind: what each verdict does for a mutation, and for a job. */
export function handlerTable(kind: Exclude<ToolKind, 'read'>, settings: ClaimSettings): HandlerTable {
  return kind === 'job' ? jobHandlers(settings) : mutationHandlers(settings);
}

/** Whether the verdict's row is an earlier execution this call's span links to. */
export const LINKS_ORIGINAL = {
  won: false,
  replay: true,
  final_failure: true,
  conflict: true,
  running: true,
  abandoned: true,
  reclaimed: false,
  raced: false,
  unknown: true,
  awaiting: true,
  approved: true,
  declined: true,
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
      error: keyReused(name, reason),
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
  const run: RunWon = (row, call, approved) =>
    execute(row, call).then(
      (done): CallEnd =>
        'error' in done
          ? { outcome: done.outcome, error: done.error }
          : answer(
              approved && done.outcome === 'executed' ? 'approved' : done.outcome,
              done.value,
              row,
              call,
              done.completedAt,
            ),
    );
  const gate = approvalHandlers(settings.approval, run);
  // Without an approval rule a won claim runs at once, as before approvals existed: no frame of the gate's.
  const won: Handler<'won'> =
    settings.approval.rule === undefined
      ? ({ row }, call) => run(row, call, false)
      : ({ row }, call) => gate.won(row, call);
  return {
    ...shared,
    won,
    awaiting: gate.awaiting,
    approved: gate.approved,
    declined: gate.declined,
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
        error: inProgress(name, retryAfterMs(row)),
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
  /** Starts the job of a claim this call won (`approved`: a person's approval let it start) and answers at once. */
  const start = (row: ClaimRow, call: ClaimCall, approved: boolean): CallEnd => {
    const work = execute(row, call);
    void runtime.track(work.catch(() => {}));
    // The run this call just started: running, whatever the claim's row said.
    return answer(approved ? 'approved' : 'executed', runningJobStatus(row, true), row, call);
  };
  // Approval gates the start as it gates a mutation's handler: nothing starts until a person said yes.
  const gate = approvalHandlers(settings.approval, (row, call, approved) =>
    Promise.resolve(start(row, call, approved)),
  );
  // Without an approval rule a won claim starts at once, answering without a promise of the gate's.
  const won: Handler<'won'> =
    settings.approval.rule === undefined
      ? ({ row }, call) => start(row, call, false)
      : ({ row }, call) => gate.won(row, call);
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
    awaiting: gate.awaiting,
    approved: gate.approved,
    declined: gate.declined,
  };
}

/** The claim loop of one tool: claim, judge, and hand the verdict to its kind's handler until the call ends. */
export function createClaimLoop(
  kind: Exclude<ToolKind, 'read'>,
  settings: ClaimSettings,
): (call: ClaimCall) => Promise<CallEnd> {
  const table = handlerTable(kind, settings);
  const dispatch = <K extends VerdictKind>(verdict: VerdictOf<K>, call: ClaimCall) =>
    table[verdict.kind](verdict, call);
  const contended = (): CallEnd => ({ outcome: 'failed', error: contention(settings.name) });

  return async (call) => {
    const { facts, waiter, scope, request } = call;
    for (let races = 0; ; ) {
      waiter.beforeClaim();
      // An outcome of this key this process holds (kept, or its first save still in flight) must land before the
      // claim could take the key over: this process never runs a handler whose result it already has.
      const flushing = settings.runtime.saves.flush(request.tenant, request.tool, request.key);
      if (flushing) {
        await flushing.catch((error: unknown) => {
          throw heldNotSaved(settings.name, error);
        });
      }
      let row: ClaimRow | undefined;
      // A try around the await rather than a `.catch`, which would be one more promise on every claim.
      try {
        row = await settings.runtime.store.claim(request, scope.recordLedgerOperation);
      } catch (error) {
        // The statement may have committed: keep the token so a retry from here can take the row back.
        if (isOutcomeUnknown(error)) {
          settings.runtime.lostClaims.remember(
            LostClaims.key(request.tenant, request.tool, request.key),
            request.leaseOwner,
            request.leaseSeconds,
          );
        }
        throw error;
      }
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
        if (++races > MAX_RACE_RETRIES) return contended();
        waiter.noteRetry();
        continue;
      }
      if (next === 'wait') continue;
      return next;
    }
  };
}
