import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { ResolvedToolConfig } from '../config/tool.js';
import type { ApprovalDecision, ApprovalRule } from '../contract/approval.js';
import { jsonText } from '../contract/canonical-json.js';
import { ToolLedgerError } from '../contract/errors.js';
import type { StoredError } from '../contract/types.js';
import type { ApprovalRecord } from '../ledger/approvals/store.js';
import { fenceOf } from '../ledger/fence.js';
import type { ClaimRow } from '../ledger/run-row.js';
import {
  approvalDeclined,
  approvalExpired,
  approvalRequired,
  approvalRuleThrew,
  approvedArgumentsInvalid,
} from './approval-messages.js';
import type { CallEnd } from './call-end.js';
import type { ClaimCall } from './execution.js';
import { toStoredError } from './failures.js';
import type { LedgerRuntime } from './runtime.js';
import { validateInput } from './validate.js';
import type { Handler, Next } from './verdict-handler.js';
import { DECISION_BACKOFF, Waiter } from './wait.js';

/** What the approval gate of one tool needs, resolved once per tool (config/tool.ts). */
export interface ApprovalSettings {
  readonly name: string;
  readonly runtime: LedgerRuntime;
  /** Undefined for a tool without `approval`: its won claims run at once, and it still honours decided rows. */
  readonly rule: ApprovalRule | undefined;
  readonly approvalTtlSeconds: number;
  readonly approvalWaitMs: number;
  readonly ttlSeconds: number;
  readonly input: StandardSchemaV1 | undefined;
}

/** A tool's approval settings from its resolved options. */
export function approvalSettings(runtime: LedgerRuntime, tool: ResolvedToolConfig): ApprovalSettings {
  return {
    name: tool.name,
    runtime,
    rule: tool.approval,
    approvalTtlSeconds: tool.approvalTtlSeconds,
    approvalWaitMs: tool.approvalWaitMs,
    ttlSeconds: tool.ttlSeconds,
    input: tool.input,
  };
}

/** Runs the handler for a claim this call won; `approved` when a person's approval let it run. */
export type RunWon = (row: ClaimRow, call: ClaimCall, approved: boolean) => Promise<CallEnd>;

/** The claim loop's handlers of a won claim and of the three approval verdicts. */
export interface ApprovalHandlers {
  readonly won: (row: ClaimRow, call: ClaimCall) => Promise<Next>;
  readonly awaiting: Handler<'awaiting'>;
  readonly approved: Handler<'approved'>;
  readonly declined: Handler<'declined'>;
}

/** The decline a declined row's stored error carries (`details`, written by `ledger.decline`). */
export function declineOf(stored: StoredError | null): ApprovalDecision {
  const details = (stored?.details ?? {}) as Partial<Record<keyof ApprovalDecision, unknown>>;
  return {
    decision: 'declined',
    by: typeof details.by === 'string' ? details.by : 'unknown',
    at: new Date(typeof details.at === 'string' ? details.at : 0),
    reason: typeof details.reason === 'string' ? details.reason : undefined,
    fingerprint: typeof details.fingerprint === 'string' ? details.fingerprint : '',
  };
}

/**
 * Each call's wait for a decision, made at its first pending answer: its own budget (`approvalWaitSeconds`),
 * counted from then, across the claims the call makes while it waits.
 */
function decisionWaits(runtime: LedgerRuntime, budgetMs: number): (call: ClaimCall) => Waiter {
  const waits = new WeakMap<ClaimCall, Waiter>();
  return (call) => {
    let wait = waits.get(call);
    if (!wait) {
      wait = new Waiter(runtime.notifier, { budgetMs, ...DECISION_BACKOFF }, call.context.signal);
      waits.set(call, wait);
    }
    return wait;
  };
}

/**
 * Whether the key's run has left `awaiting_approval` (decided, past its deadline, or gone). A read the database
 * could not answer for a moment (a retryable `LEDGER_UNAVAILABLE`: a restart, a dropped connection) counts as not
 * yet, so an outage shorter than the wait is waited out rather than failing the call.
 */
async function awaitsNoMore(runtime: LedgerRuntime, row: ClaimRow): Promise<boolean> {
  try {
    const state = await runtime.approvals.state(row.runKey);
    return state?.status !== 'awaiting_approval' || state.deadline_passed;
  } catch (error) {
    if (error instanceof ToolLedgerError && error.code === 'LEDGER_UNAVAILABLE' && error.retryable)
      return false;
    throw error;
  }
}

/**
 * The approval gate (docs/ledger.md, "Approvals"): between a won claim and its handler, and for the rows awaiting,
 * approved or declined. A tool without `approval` sends nothing more than before on a won claim: the gate only
 * acts on the rows a decision made.
 */
export function approvalHandlers(settings: ApprovalSettings, run: RunWon): ApprovalHandlers {
  const { name, runtime, rule } = settings;
  const waitOf = decisionWaits(runtime, settings.approvalWaitMs);

  /**
   * Awaiting a decision: wait for it within `approvalWaitSeconds`, else answer `APPROVAL_REQUIRED`. Between the
   * wait's steps only the key's approval state is read; the call claims again once it moved, and the claim then
   * says what the decision means for it.
   */
  const pending = async (call: ClaimCall, row: ClaimRow, deadline: Date, since: number): Promise<Next> => {
    if (settings.approvalWaitMs > 0) {
      const wait = waitOf(call);
      let mark = since;
      // Bounded by the wait's budget (and the caller's signal): each step but the first sleeps a backoff.
      while (await wait.wait(row.id, { since: mark })) {
        call.waiter.noteRetry();
        mark = runtime.notifier.mark();
        if (await awaitsNoMore(runtime, row)) return 'wait';
      }
      call.facts.waitedMs = wait.elapsedMs();
    }
    return { outcome: 'approval_required', error: approvalRequired(call.request, deadline) };
  };

  const needsApproval = async (call: ClaimCall): Promise<boolean> => {
    if (rule === 'required') return true;
    const { request, context } = call;
    return (
      (await rule!(call.input, {
        tool: name,
        tenant: request.tenant,
        key: request.key,
        user: context.user,
        toolCallId: context.toolCallId,
      })) === true
    );
  };

  /** Runs an approved run: with the approver's edit when there is one, validated as the tool's input. */
  const runApproved = async (row: ClaimRow, call: ClaimCall, record: ApprovalRecord): Promise<Next> => {
    if (record.edited !== true) return run(row, call, true);
    let input = record.approvedArguments;
    if (settings.input) {
      try {
        input = await validateInput(settings.input, input, name);
      } catch (cause) {
        const error = approvedArgumentsInvalid(name, cause);
        await runtime.store
          .complete({
            ...fenceOf(row),
            status: 'failed',
            final: true,
            resultJson: null,
            error: toStoredError(error, true),
            ttlSeconds: settings.ttlSeconds,
          })
          .catch(() => {});
        return { outcome: 'failed', error };
      }
    }
    return run(row, { ...call, input }, true);
  };

  /** A claim this call won: an approval given to this run lets it run; else the rule decides whether to ask. */
  const won = async (row: ClaimRow, call: ClaimCall): Promise<Next> => {
    if (rule === undefined) return run(row, call, false);
    // A taken-over row may be an approved run's retry or its takeover after a crash: its approval still holds.
    if (row.claim !== 'inserted') {
      const state = await runtime.approvals.state(row.runKey);
      if (state?.approval_current && state.approval?.decision === 'approved') {
        return runApproved(row, call, state.approval);
      }
    }
    let needed: boolean;
    try {
      needed = await needsApproval(call);
    } catch (cause) {
      const error = approvalRuleThrew(name, cause);
      // The key stays retryable: a failure that is not final is taken over by the next call.
      await runtime.store
        .complete({
          ...fenceOf(row),
          status: 'failed',
          final: false,
          resultJson: null,
          error: toStoredError(error, false),
          ttlSeconds: settings.ttlSeconds,
        })
        .catch(() => {});
      return { outcome: 'failed', error };
    }
    if (!needed) return run(row, call, false);
    const since = runtime.notifier.mark();
    const deadline = await runtime.approvals.park(
      fenceOf(row),
      settings.approvalTtlSeconds,
      settings.ttlSeconds,
      jsonText(call.input, true),
    );
    // The fence refused: this claim's lease lapsed and another caller took the key over.
    if (deadline === undefined) return 'race';
    return pending(call, row, deadline, since);
  };

  const awaiting: Handler<'awaiting'> = async ({ row }, call) => {
    const since = runtime.notifier.mark();
    const state = await runtime.approvals.state(row.runKey);
    // Decided (or gone) since the claim read it: claim again.
    if (state?.status !== 'awaiting_approval' || state.deadline_ms === null) return 'race';
    const deadline = new Date(Number(state.deadline_ms));
    if (state.deadline_passed) {
      return { outcome: 'expired', error: approvalExpired(call.request, deadline) };
    }
    return pending(call, row, deadline, since);
  };

  const approved: Handler<'approved'> = async ({ row }, call) => {
    const { request } = call;
    const taken = await runtime.approvals.takeApproved({
      runKey: row.runKey,
      fields: request,
      attempt: row.attempt,
    });
    // Another caller took it first (and runs it): claim again, which waits for its result or replays it.
    if (!taken) return 'race';
    call.facts.attempt = taken.attempt;
    return runApproved(taken, call, taken.approval ?? {});
  };

  const declined: Handler<'declined'> = ({ row }, call) => {
    return { outcome: 'declined', error: approvalDeclined(call.request, declineOf(row.error_json)) };
  };

  return { won, awaiting, approved, declined };
}
