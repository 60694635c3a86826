/**
 * The error texts of approvals, each saying what happened and what to do: the calls' (`APPROVAL_REQUIRED`,
 * `_DECLINED`, `_EXPIRED`) and the deciders' (`_NOT_PENDING`, `_ALREADY_DECIDED`, `_ACTOR_REQUIRED`).
 */
import type { ApprovalDecision } from '../contract/approval.js';
import { ToolLedgerError } from '../contract/errors.js';
import type { RunKey } from '../ledger/run-row.js';

/** The key's three parts alone (a claim request carries more, which an error must not). */
const keyOf = ({ tenant, tool, key }: RunKey): RunKey => ({ tenant, tool, key });

/** How a person approves from a shell, with the key's three parts (the console approves from its inbox). */
function approveCommand({ tenant, tool, key }: RunKey): string {
  return `tool-ledger approve --tenant ${shellWord(tenant)} --tool ${shellWord(tool)} --key ${shellWord(key)} --by <you>`;
}

/** A word a shell reads back as it is. */
function shellWord(text: string): string {
  return /^[\w.:/@-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

export const approvalRequired = (runKey: RunKey, deadline: Date) =>
  new ToolLedgerError(
    'APPROVAL_REQUIRED',
    `Tool "${runKey.tool}" needs a person's approval for this call (idempotency key "${runKey.key}", tenant "${runKey.tenant}"), and nobody has decided yet: nothing ran. A person approves or declines it until ${deadline.toISOString()}, in the console's approvals inbox or with \`${approveCommand(runKey)}\` (or \`tool-ledger decline ... --reason\`). Then call again with the same key and arguments: an approval runs it once, a decline answers APPROVAL_DECLINED. Do not use a new key: it would ask for a second approval.`,
    { approval: { ...keyOf(runKey), deadline } },
  );

export const approvalExpired = (runKey: RunKey, deadline: Date) =>
  new ToolLedgerError(
    'APPROVAL_EXPIRED',
    `Tool "${runKey.tool}": nobody approved or declined this call (idempotency key "${runKey.key}") before its deadline, ${deadline.toISOString()}, so it expired and nothing ran. This is final for this key; if the action is still wanted, make it a new request with a new key (and raise approvalTtlSeconds if deciders need longer).`,
    { approval: { ...keyOf(runKey), deadline } },
  );

export const approvalDeclined = (runKey: RunKey, decision: ApprovalDecision) =>
  new ToolLedgerError(
    'APPROVAL_DECLINED',
    `Tool "${runKey.tool}": ${decision.by} declined this call (idempotency key "${runKey.key}") at ${decision.at.toISOString()}${decision.reason ? `: ${decision.reason}` : ''}. Nothing ran, and this is final: every call with this key gets this answer.`,
    { approval: { ...keyOf(runKey), decision } },
  );

export const approvalNotPending = (runKey: RunKey, status: string) =>
  new ToolLedgerError(
    'APPROVAL_NOT_PENDING',
    status === 'none'
      ? `No call of tool "${runKey.tool}" with idempotency key "${runKey.key}" (tenant "${runKey.tenant}") is awaiting approval: the key has no run (never called, or forgotten or purged after its TTL). Check the tenant, tool and key; list the calls that await one with \`tool-ledger list --status awaiting_approval\`.`
      : `The call of tool "${runKey.tool}" with idempotency key "${runKey.key}" (tenant "${runKey.tenant}") is not awaiting approval: its status is ${status}. Only a call awaiting one can be decided; \`tool-ledger inspect\` shows its history.`,
    { approval: { ...keyOf(runKey), status } },
  );

export const approvalAlreadyDecided = (runKey: RunKey, decision: ApprovalDecision) =>
  new ToolLedgerError(
    'APPROVAL_ALREADY_DECIDED',
    `The call of tool "${runKey.tool}" with idempotency key "${runKey.key}" was already ${decision.decision} by ${decision.by} at ${decision.at.toISOString()}${decision.reason ? ` (${decision.reason})` : ''}; this decision was not recorded. A decision is final: to act otherwise, make a new request with a new key.`,
    { approval: { ...keyOf(runKey), status: decision.decision, decision } },
  );

export const approvalActorRequired = (what: 'approve' | 'decline', got: unknown) =>
  new ToolLedgerError(
    'APPROVAL_ACTOR_REQUIRED',
    `${what}() needs \`by\`: who takes the decision (a user id or e-mail, 1-255 characters), got ${got === undefined ? 'none' : JSON.stringify(got)}. Every decision is audited; an anonymous one is refused.`,
  );

export const decisionInputInvalid = (message: string) =>
  new ToolLedgerError('INPUT_INVALID', `${message} Nothing was decided.`);

export const approvalRuleThrew = (tool: string, error: unknown) =>
  new ToolLedgerError(
    'TOOL_FAILED',
    `Tool "${tool}": its approval rule threw (${error instanceof Error ? error.message : String(error)}), so whether the call needs an approval is unknown and nothing ran. Fix the rule; the call may be retried with the same key.`,
    { cause: error, retryable: true },
  );

export const approvedArgumentsInvalid = (tool: string, cause: unknown) =>
  new ToolLedgerError(
    'INPUT_INVALID',
    `Tool "${tool}": the arguments the approver edited fail the tool's input schema (${cause instanceof Error ? cause.message : String(cause)}), so nothing ran and the approval is spent. Make a new request with a new key, and approve it with valid arguments.`,
    { cause, retryable: false },
  );
