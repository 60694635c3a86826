import { ToolLedgerError } from '../../contract/errors.js';
import type { CallContext, InvokeReport } from '../../contract/types.js';
import { captureContent } from '../../telemetry/content.js';
import type { Redactor } from '../../telemetry/options.js';
import { createRedactor } from '../../telemetry/redact/default-redactor.js';
import { isRecord } from '../shared/adapter-tool.js';
import {
  type ApprovalDesk,
  type ApprovalTarget,
  DEFAULT_TENANT,
  recordDecision,
} from '../shared/approvals.js';

/** The params of an `elicitation/create` request in form mode, as both SDK lines and the wire take them. */
export interface McpFormElicitation {
  readonly mode: 'form';
  readonly message: string;
  readonly requestedSchema: {
    readonly type: 'object';
    readonly properties: Record<string, Record<string, unknown>>;
    readonly required?: readonly string[];
  };
}

/** A client's answer to an elicitation (`ElicitResult`). */
export interface McpElicitResult {
  readonly action?: unknown;
  readonly content?: unknown;
}

/** Sends one elicitation to the client of the call and returns its answer. */
export type McpElicit = (params: McpFormElicitation) => Promise<McpElicitResult>;

/** How a call that awaits a person's decision asks for it over MCP. */
export interface McpApprovalSettings {
  /** Records the decision: `ledger.approve` / `ledger.decline` (the ledger itself will do). */
  readonly ledger: ApprovalDesk;
  /** Scrubs the arguments shown to the person. @default createRedactor() */
  readonly redactor?: Redactor | undefined;
  /** Longest summary of the arguments, in UTF-16 code units of their scrubbed JSON. @default 2000 */
  readonly maxSummaryLength?: number | undefined;
}

const DEFAULT_SUMMARY_LENGTH = 2000;
let defaultRedactor: Redactor | undefined;

/** Whether a client's declared capabilities include form-mode elicitation (an empty `elicitation` means form). */
export function supportsFormElicitation(capabilities: unknown): boolean {
  if (!isRecord(capabilities) || !isRecord(capabilities.elicitation)) return false;
  const elicitation = capabilities.elicitation;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

/** The form a person answers: approve or decline, and an optional reason. */
export function approvalForm(
  target: ApprovalTarget,
  input: unknown,
  settings: McpApprovalSettings,
): McpFormElicitation {
  defaultRedactor ??= settings.redactor === undefined ? createRedactor() : undefined;
  const redactor = settings.redactor ?? (defaultRedactor as Redactor);
  const summary =
    captureContent(input, redactor, settings.maxSummaryLength ?? DEFAULT_SUMMARY_LENGTH) ??
    '(the arguments could not be shown)';
  return {
    mode: 'form',
    message: `Approve this call of ${target.tool}? It runs only once approved, with exactly these arguments (personal data hidden): ${summary}`,
    requestedSchema: {
      type: 'object',
      properties: {
        decision: {
          type: 'string',
          title: 'Decision',
          enum: ['approve', 'decline'],
          description: `Approve or decline this call of ${target.tool}.`,
        },
        reason: { type: 'string', title: 'Reason', description: 'Why (kept in the audit).', maxLength: 500 },
      },
      required: ['decision'],
    },
  };
}

/** What came of asking: a decision recorded in the ledger, or none (cancelled, no answer, refused). */
export type AskOutcome = 'decided' | 'undecided';

/**
 * Asks the person at the client to approve or decline a call that awaits approval, and records their answer in
 * the ledger, bound to the call's tenant, tool and key. A cancelled or dismissed form, an answer that is not a
 * decision, or an elicitation that fails records nothing: the call keeps waiting for a decision made elsewhere
 * (the CLI, the console) until its deadline. A decision someone else recorded meanwhile stands.
 */
export async function askForApproval(
  elicit: McpElicit,
  target: ApprovalTarget,
  input: unknown,
  by: string,
  settings: McpApprovalSettings,
): Promise<AskOutcome> {
  let answer: McpElicitResult;
  try {
    answer = await elicit(approvalForm(target, input, settings));
  } catch {
    return 'undecided';
  }
  const content = isRecord(answer.content) ? answer.content : {};
  const reason =
    typeof content.reason === 'string' && content.reason.trim() ? content.reason.trim() : undefined;
  let approved: boolean;
  if (answer.action === 'accept' && content.decision === 'approve') approved = true;
  else if (answer.action === 'accept' && content.decision === 'decline') approved = false;
  else if (answer.action === 'decline') approved = false;
  else return 'undecided';
  try {
    await recordDecision(settings.ledger, target, { approved, by, reason }, 'an MCP client');
  } catch (error) {
    // Someone decided first (the CLI, another client): the ledger's decision stands, and the call reads it.
    if (
      error instanceof ToolLedgerError &&
      (error.code === 'APPROVAL_ALREADY_DECIDED' || error.code === 'APPROVAL_NOT_PENDING')
    ) {
      return 'decided';
    }
    throw error;
  }
  return 'decided';
}

/** How one call may ask for a decision: where to record it, how to ask, and who is asked. */
export interface ApprovalAsker extends McpApprovalSettings {
  /** Undefined when the client cannot be asked. */
  readonly elicit: { readonly ask: McpElicit; readonly clientName: string | undefined } | undefined;
  /** The approver the server names, if any; else the call's user, else the client's name. */
  readonly approver: () => Promise<string | undefined>;
}

/**
 * Invokes the tool; when the call awaits approval, asks the person at the client (when it can be asked and
 * someone can be named for the audit), records their answer and invokes again. Throws the ledger's
 * APPROVAL_REQUIRED when nothing was decided.
 */
export async function invokeWithApproval(
  tool: {
    readonly name: string;
    invoke(input: unknown, context: CallContext): Promise<InvokeReport<unknown>>;
  },
  input: unknown,
  context: CallContext,
  asker: ApprovalAsker | undefined,
): Promise<InvokeReport<unknown>> {
  try {
    return await tool.invoke(input, context);
  } catch (error) {
    if (!(error instanceof ToolLedgerError && error.code === 'APPROVAL_REQUIRED')) throw error;
    if (typeof context.key !== 'string') throw error;
    if (asker?.elicit === undefined) throw error;
    const target = { tenant: context.tenant ?? DEFAULT_TENANT, tool: tool.name, key: context.key };
    const by = (await asker.approver()) ?? context.user ?? asker.elicit.clientName;
    if (by === undefined) throw error;
    if ((await askForApproval(asker.elicit.ask, target, input, by, asker)) === 'undecided') throw error;
    return tool.invoke(input, context);
  }
}

const DEFAULT_TIMEOUT_SECONDS = 600;

interface LowLevelServer {
  getClientCapabilities?: () => unknown;
  getClientVersion?: () => unknown;
  elicitInput?: (params: McpFormElicitation, options?: Record<string, unknown>) => Promise<McpElicitResult>;
}

/**
 * How to ask the client of one call, when it can be asked: a server of `@modelcontextprotocol/sdk` 1.x whose
 * client declared form-mode elicitation. The request goes out related to the call, so a Streamable HTTP
 * transport sends it on the call's own stream. Undefined otherwise (SDK 2.x servers answer the tool error).
 */
export function approvalElicit(
  server: unknown,
  request: {
    readonly sdk: 1 | 2;
    readonly requestId: string | number | undefined;
    readonly signal?: AbortSignal | undefined;
  },
  timeoutSeconds: number | undefined,
): { readonly ask: McpElicit; readonly clientName: string | undefined } | undefined {
  if (request.sdk !== 1) return undefined;
  const low = isRecord(server) && isRecord(server.server) ? (server.server as LowLevelServer) : undefined;
  const elicitInput = low?.elicitInput;
  if (low === undefined || typeof elicitInput !== 'function') return undefined;
  if (!supportsFormElicitation(low.getClientCapabilities?.())) return undefined;
  const version = low.getClientVersion?.();
  const name =
    isRecord(version) && typeof version.name === 'string' && version.name ? version.name : undefined;
  const timeout = (timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  return {
    clientName: name === undefined ? undefined : `MCP client ${name.slice(0, 100)}`,
    ask: (params) =>
      elicitInput.call(low, params, {
        timeout,
        ...(request.requestId === undefined ? {} : { relatedRequestId: request.requestId }),
        ...(request.signal === undefined ? {} : { signal: request.signal }),
      }),
  };
}
