import { isRecord } from '../shared/adapter-tool.js';
import { type ApprovalDesk, DEFAULT_TENANT, recordDecision, unboundDecision } from '../shared/approvals.js';
import { aiToolBinding } from './tool.js';

/** Options of `recordAiApprovals`. */
export interface RecordAiApprovalsOptions {
  /**
   * The conversation as the app will pass it to the next `generateText`/`streamText`: the assistant message with
   * the `tool-approval-request` parts, then the `tool` message with the `tool-approval-response` parts the app
   * collected.
   */
  readonly messages: readonly unknown[];
  /** The same tools the generation gets; only tools made by `ledgerAiTool` are recorded, others are left alone. */
  readonly tools: Readonly<Record<string, unknown>>;
  /** The person who decided. Required: the ledger refuses an anonymous decision. */
  readonly by: string;
  /** ai 7: the generation's `toolsContext`, when the tools read their conversation, tenant or user from it. */
  readonly toolsContext?: Readonly<Record<string, unknown>>;
  /** ai 6: the generation's `experimental_context`, when the tools read their conversation, tenant or user from it. */
  readonly experimental_context?: unknown;
}

/** One decision recorded: which tool call, and what the ledger answered. */
export interface RecordedAiApproval<TDecision> {
  readonly approvalId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly approved: boolean;
  /** The ledger's record of the decision (`ledger.approve`/`ledger.decline`'s answer). */
  readonly decision: TDecision;
}

interface Part {
  readonly type?: unknown;
  readonly [field: string]: unknown;
}

function partsOf(message: unknown, role: string): Part[] {
  if (!isRecord(message) || message.role !== role || !Array.isArray(message.content)) return [];
  return message.content.filter(isRecord) as Part[];
}

/**
 * Records in the ledger the approval responses an app collected for the AI SDK's tool approval requests (the
 * `tool-approval-response` parts of the last message), each bound to its tool call's ledger key, before the app
 * hands the conversation back to `generateText`/`streamText`. The ledger then runs an approved call once, with
 * the arguments the model sent when it asked (any other arguments are `KEY_REUSED`), and never runs a declined
 * one.
 *
 * A response that names no request of the history, or a request of no tool call, is refused
 * (`INPUT_INVALID`) before anything is recorded; one on a call that awaits no decision (another conversation,
 * decided already) is the ledger's `APPROVAL_NOT_PENDING` or `APPROVAL_ALREADY_DECIDED`. Responses are recorded
 * in order; the first refusal stops the rest.
 */
export async function recordAiApprovals<TDecision>(
  ledger: ApprovalDesk<TDecision>,
  options: RecordAiApprovalsOptions,
): Promise<Array<RecordedAiApproval<TDecision>>> {
  const messages = options.messages;
  const last = messages.at(-1);
  const responses = partsOf(last, 'tool').filter((part) => part.type === 'tool-approval-response');
  const requests = new Map<string, Part>();
  const calls = new Map<string, Part>();
  for (const message of messages) {
    for (const part of partsOf(message, 'assistant')) {
      if (part.type === 'tool-approval-request' && typeof part.approvalId === 'string')
        requests.set(part.approvalId, part);
      if (part.type === 'tool-call' && typeof part.toolCallId === 'string') calls.set(part.toolCallId, part);
    }
  }
  // Everything is bound first, so a response that names nothing is refused before any decision is recorded.
  const bound = responses.map((response) => {
    const approvalId = String(response.approvalId);
    const request = requests.get(approvalId);
    if (request === undefined) {
      throw unboundDecision(
        `The approval response ${JSON.stringify(approvalId)} answers no tool-approval-request of the conversation: nothing was recorded. Pass the messages the generation returned, unchanged, followed by the tool message with the responses.`,
      );
    }
    const toolCallId = String(request.toolCallId);
    const call = calls.get(toolCallId);
    if (call === undefined) {
      throw unboundDecision(
        `The approval request ${JSON.stringify(approvalId)} names the tool call ${JSON.stringify(toolCallId)}, which is not in the conversation: nothing was recorded.`,
      );
    }
    const toolName = String(call.toolName);
    const binding = Object.hasOwn(options.tools, toolName)
      ? aiToolBinding(options.tools[toolName])
      : undefined;
    return { approvalId, toolCallId, toolName, approved: response.approved === true, response, binding };
  });
  const recorded: Array<RecordedAiApproval<TDecision>> = [];
  for (const entry of bound) {
    if (entry.binding === undefined) continue;
    const target = entry.binding.target({
      toolCallId: entry.toolCallId,
      context: options.toolsContext?.[entry.toolName],
      experimental_context: options.experimental_context,
    });
    const reason = typeof entry.response.reason === 'string' ? entry.response.reason : undefined;
    const decision = await recordDecision(
      ledger,
      { tenant: target.tenant ?? DEFAULT_TENANT, tool: entry.binding.ledgerTool.name, key: target.key },
      { approved: entry.approved, by: options.by, reason },
      'the AI SDK approval flow',
    );
    recorded.push({
      approvalId: entry.approvalId,
      toolCallId: entry.toolCallId,
      toolName: entry.toolName,
      approved: entry.approved,
      decision,
    });
  }
  return recorded;
}
