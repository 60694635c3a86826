import type { StandardSchemaV1 } from '@standard-schema/spec';
import type {
  ApprovalDecision,
  ApprovalTarget,
  ApproveRequest,
  AwaitingApproval,
  DeclineRequest,
  ListApprovalsOptions,
} from '../contract/approval.js';
import { jsonText, type OmitTree } from '../contract/canonical-json.js';
import { ToolLedgerError } from '../contract/errors.js';
import { parameterHash } from '../contract/fingerprint.js';
import { assertStorableId, assertValidKey } from '../contract/keys.js';
import type { StoredError } from '../contract/types.js';
import type { ApprovalState, DecisionWrite } from '../ledger/approvals/store.js';
import type { RunKey } from '../ledger/run-row.js';
import {
  approvalActorRequired,
  approvalAlreadyDecided,
  approvalDeclined,
  approvalExpired,
  approvalNotPending,
  decisionInputInvalid,
} from './approval-messages.js';
import type { LedgerRuntime } from './runtime.js';
import { validateInput } from './validate.js';

/** What the desk knows of a tool registered on this ledger: how to check an approver's edit. */
export interface RegisteredTool {
  readonly input: StandardSchemaV1 | undefined;
  readonly volatile: OmitTree | undefined;
  readonly ttlSeconds: number;
}

/** The approvals a ledger hands out: `ledger.approve`, `ledger.decline` and `ledger.approvals.list`. */
export interface ApprovalDesk {
  approve(request: ApproveRequest): Promise<ApprovalDecision>;
  decline(request: DeclineRequest): Promise<ApprovalDecision>;
  list(options?: ListApprovalsOptions): Promise<AwaitingApproval[]>;
}

const MAX_ACTOR_LENGTH = 255;
const MAX_REASON_LENGTH = 2000;
const MAX_LIST = 1000;

function checkTarget(target: ApprovalTarget, what: string): RunKey {
  if (target === null || typeof target !== 'object') {
    throw decisionInputInvalid(`${what}() needs { tenant?, tool, key, by, ... }.`);
  }
  const tenant = target.tenant ?? 'default';
  const { tool, key } = target;
  if (typeof tool !== 'string' || tool.length === 0) {
    throw decisionInputInvalid(`${what}() needs the tool's name, got ${JSON.stringify(tool)}.`);
  }
  try {
    assertStorableId(tenant, 'tenant', tool);
    assertValidKey(key, tool);
  } catch (error) {
    throw decisionInputInvalid(`${what}(): ${error instanceof Error ? error.message : String(error)}`);
  }
  return { tenant, tool, key };
}

function checkActor(by: unknown, what: 'approve' | 'decline'): string {
  if (typeof by !== 'string' || by.trim().length === 0 || by.length > MAX_ACTOR_LENGTH) {
    throw approvalActorRequired(what, by);
  }
  return by;
}

function checkReason(reason: unknown, what: string, required: boolean): string | undefined {
  if (reason === undefined && !required) return undefined;
  if (typeof reason !== 'string' || reason.trim().length === 0 || reason.length > MAX_REASON_LENGTH) {
    throw decisionInputInvalid(
      `${what}() needs reason as a non-empty string of at most ${MAX_REASON_LENGTH} characters${required ? ': every later call with the key reads it' : ''}, got ${reason === undefined ? 'none' : typeof reason}.`,
    );
  }
  return reason;
}

/** The decision a row holds, as `approve`/`decline` return it (and the loser of a race is told). */
function decisionOf(state: ApprovalState): ApprovalDecision | undefined {
  const record = state.approval;
  if (!record?.decision || !record.by || !record.at) return undefined;
  return {
    decision: record.decision,
    by: record.by,
    at: new Date(record.at),
    reason: record.reason ?? undefined,
    fingerprint: record.fingerprint ?? state.parameter_hash,
    approvedFingerprint: record.approvedFingerprint,
    edited: record.edited,
  };
}

/** Why a decision's transaction refused the row it locked. */
function refusal(runKey: RunKey, state: ApprovalState): ToolLedgerError {
  const decided = decisionOf(state);
  if (decided && state.approval_current && !state.ttl_over) return approvalAlreadyDecided(runKey, decided);
  if (state.ttl_over) return approvalNotPending(runKey, 'none');
  if (state.status === 'awaiting_approval' && state.deadline_ms !== null) {
    return approvalExpired(runKey, new Date(Number(state.deadline_ms)));
  }
  return approvalNotPending(runKey, state.status);
}

/** Whether the row the transaction locked can be decided now. */
const decidable = (state: ApprovalState) =>
  state.status === 'awaiting_approval' && !state.deadline_passed && !state.ttl_over;

/** The decline's stored error, which every later call with the key replays (`declineOf` reads it back). */
function declineError(runKey: RunKey, decision: ApprovalDecision): StoredError {
  const error = approvalDeclined(runKey, decision);
  return {
    name: 'ToolLedgerError',
    code: 'APPROVAL_DECLINED',
    message: error.message,
    final: true,
    reason: 'declined',
    details: {
      by: decision.by,
      at: decision.at.toISOString(),
      reason: decision.reason,
      fingerprint: decision.fingerprint,
    },
  };
}

/** The desk of one ledger, over its runtime and the tools registered on it. */
export function approvalDesk(
  runtime: LedgerRuntime,
  tools: ReadonlyMap<string, RegisteredTool>,
): ApprovalDesk {
  const ttlOf = (tool: string) => tools.get(tool)?.ttlSeconds ?? runtime.config.ttlSeconds;

  /** The approver's edit, checked as the tool's input when the tool is registered here. */
  const edited = async (runKey: RunKey, args: unknown) => {
    const tool = tools.get(runKey.tool);
    const validated = tool?.input ? await validateInput(tool.input, args, runKey.tool) : args;
    try {
      // Stored as JSON, as the handler will receive it.
      const text = jsonText(validated, true);
      return { fingerprint: parameterHash(validated, tool?.volatile), value: JSON.parse(text) as unknown };
    } catch (error) {
      throw decisionInputInvalid(
        `approve(): arguments are not JSON (${error instanceof Error ? error.message : String(error)}).`,
      );
    }
  };

  const approve = async (request: ApproveRequest): Promise<ApprovalDecision> => {
    runtime.assertOpen(request?.tool ?? 'approve');
    const runKey = checkTarget(request, 'approve');
    const by = checkActor(request.by, 'approve');
    const reason = checkReason(request.reason, 'approve', false);
    const edit = 'arguments' in request ? await edited(runKey, request.arguments) : undefined;
    const result = await runtime.approvals.decide(runKey, (state): DecisionWrite | undefined => {
      if (!decidable(state)) return undefined;
      return {
        status: 'approved',
        record: {
          decision: 'approved',
          by,
          reason: reason ?? null,
          fingerprint: state.parameter_hash,
          approvedFingerprint: edit?.fingerprint ?? state.parameter_hash,
          edited: edit !== undefined,
          ...(edit ? { approvedArguments: edit.value } : {}),
        },
        storedError: null,
        ttlSeconds: ttlOf(runKey.tool),
        audit: {
          actor: by,
          action: 'approve',
          fingerprint: state.parameter_hash,
          approvedFingerprint: edit?.fingerprint ?? state.parameter_hash,
          reason: reason ?? null,
          detail: { edited: edit !== undefined },
        },
      };
    });
    if (result.kind === 'no_run') throw approvalNotPending(runKey, 'none');
    if (result.kind === 'refused') throw refusal(runKey, result.row);
    return {
      decision: 'approved',
      by,
      at: result.at,
      reason,
      fingerprint: result.row.parameter_hash,
      approvedFingerprint: edit?.fingerprint ?? result.row.parameter_hash,
      edited: edit !== undefined,
    };
  };

  const decline = async (request: DeclineRequest): Promise<ApprovalDecision> => {
    runtime.assertOpen(request?.tool ?? 'decline');
    const runKey = checkTarget(request, 'decline');
    const by = checkActor(request.by, 'decline');
    const reason = checkReason(request.reason, 'decline', true)!;
    let decision: ApprovalDecision | undefined;
    const result = await runtime.approvals.decide(runKey, (state, at): DecisionWrite | undefined => {
      if (!decidable(state)) return undefined;
      decision = {
        decision: 'declined',
        by,
        at,
        reason,
        fingerprint: state.parameter_hash,
      };
      return {
        status: 'declined',
        record: { decision: 'declined', by, reason, fingerprint: state.parameter_hash },
        storedError: declineError(runKey, decision),
        ttlSeconds: ttlOf(runKey.tool),
        audit: {
          actor: by,
          action: 'decline',
          fingerprint: state.parameter_hash,
          approvedFingerprint: null,
          reason,
          detail: null,
        },
      };
    });
    if (result.kind === 'no_run') throw approvalNotPending(runKey, 'none');
    if (result.kind === 'refused') throw refusal(runKey, result.row);
    return decision!;
  };

  const list = async ({ tenant, tool, limit = 100 }: ListApprovalsOptions = {}) => {
    runtime.assertOpen('approvals.list');
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST) {
      throw new ToolLedgerError(
        'CONFIG_INVALID',
        `approvals.list(): limit must be an integer from 1 to ${MAX_LIST}, got ${String(limit)}.`,
      );
    }
    const rows = await runtime.approvals.list(tenant, tool, limit);
    return rows.map(
      (row): AwaitingApproval => ({
        tenant: row.tenant_id,
        tool: row.tool_name,
        key: row.idempotency_key,
        user: row.user_id ?? undefined,
        fingerprint: row.parameter_hash,
        arguments: row.arguments,
        requestedAt: new Date(Number(row.requested_ms)),
        deadline: new Date(Number(row.deadline_ms)),
        runId: row.id,
      }),
    );
  };

  return { approve, decline, list };
}
