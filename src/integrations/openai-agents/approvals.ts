import type { RunContext, RunToolApprovalItem } from '@openai/agents';
import { isRecord } from '../shared/adapter-tool.js';
import { type ApprovalDesk, DEFAULT_TENANT, recordDecision, unboundDecision } from '../shared/approvals.js';
import { agentsToolBinding } from './tool.js';

/** The part of a `RunState` these functions use: its context and the SDK's own approve/reject. */
export interface ApprovableRunState {
  readonly _context: RunContext<unknown>;
  approve(item: RunToolApprovalItem, options?: { alwaysApprove?: boolean }): void;
  reject(item: RunToolApprovalItem, options?: { alwaysReject?: boolean; message?: string }): void;
}

/** Who decides, and why. */
export interface InterruptionDecision {
  /** The person who decided. Required: the ledger refuses an anonymous decision. */
  readonly by: string;
  /** Why; recorded in the ledger's audit. A rejection without one is recorded with a generic reason. */
  readonly reason?: string;
}

/** The ledger target of an interruption of a tool `ledgerFunctionTool` made; undefined for any other tool. */
function targetOf(state: ApprovableRunState, item: RunToolApprovalItem) {
  const raw = item.rawItem as { type?: unknown; callId?: unknown; name?: unknown; arguments?: unknown };
  if (raw.type !== 'function_call') return undefined;
  const name = item.toolName ?? (typeof raw.name === 'string' ? raw.name : undefined);
  const tools: readonly unknown[] = Array.isArray(item.agent?.tools) ? item.agent.tools : [];
  const found = tools.find((tool) => isRecord(tool) && tool.name === name);
  const binding = agentsToolBinding(found);
  if (binding === undefined) return undefined;
  let input: unknown;
  try {
    input = typeof raw.arguments === 'string' && raw.arguments !== '' ? JSON.parse(raw.arguments) : {};
  } catch (error) {
    throw unboundDecision(
      `The interruption of ${String(name)} carries arguments that are not JSON, so it names no call of the ledger: nothing was recorded (${(error as Error).message}).`,
    );
  }
  const callId = typeof raw.callId === 'string' ? raw.callId : undefined;
  const { context } = binding.keyed(input, state._context, { callId });
  if (typeof context.key !== 'string') {
    throw unboundDecision(
      `The interruption of ${String(name)} has no tool call id, so it names no call of the ledger: nothing was recorded.`,
    );
  }
  return { tenant: context.tenant ?? DEFAULT_TENANT, tool: binding.ledgerTool.name, key: context.key };
}

/**
 * Approves an interruption of the Agents SDK (`result.interruptions`) in the ledger and in the run state. The
 * ledger records the decision against the call's key, whose fingerprint it took when the model made the call:
 * a run state changed afterwards (on a client, in storage) cannot make other arguments run, they are
 * `KEY_REUSED`. The ledger is asked first, so a refused decision (`APPROVAL_NOT_PENDING`,
 * `APPROVAL_ALREADY_DECIDED`, ...) leaves the state as it was. For a tool not made by `ledgerFunctionTool`, only
 * the state is approved, and the answer is undefined.
 */
export async function approveInterruption<TDecision>(
  ledger: ApprovalDesk<TDecision>,
  state: ApprovableRunState,
  interruption: RunToolApprovalItem,
  decision: InterruptionDecision,
): Promise<TDecision | undefined> {
  const target = targetOf(state, interruption);
  const recorded =
    target === undefined
      ? undefined
      : await recordDecision(
          ledger,
          target,
          { approved: true, by: decision.by, reason: decision.reason },
          'the Agents SDK',
        );
  state.approve(interruption);
  return recorded;
}

/**
 * Rejects an interruption in the ledger and in the run state: every later call with that key answers
 * `APPROVAL_DECLINED`, whatever a run state says. The reason goes to the model as the rejection message too.
 */
export async function rejectInterruption<TDecision>(
  ledger: ApprovalDesk<TDecision>,
  state: ApprovableRunState,
  interruption: RunToolApprovalItem,
  decision: InterruptionDecision,
): Promise<TDecision | undefined> {
  const target = targetOf(state, interruption);
  const recorded =
    target === undefined
      ? undefined
      : await recordDecision(
          ledger,
          target,
          { approved: false, by: decision.by, reason: decision.reason },
          'the Agents SDK',
        );
  state.reject(interruption, decision.reason === undefined ? undefined : { message: decision.reason });
  return recorded;
}
