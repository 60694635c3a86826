import { jsonSchema, type Tool, tool } from 'ai';
import { ToolLedgerError } from '../../contract/errors.js';
import type { CallContext } from '../../contract/types.js';
import {
  type AdapterTool,
  describeTool,
  type Resolver,
  resolverOf,
  runnerKey,
  stringField,
} from '../shared/adapter-tool.js';
import { HeldReports, hasApproval, registerCall } from '../shared/approvals.js';
import { ReplayNotes, withModelMessage } from '../shared/model-error.js';
import { errorText, replayNotice, type TextSubject } from '../shared/model-text.js';

/**
 * What the SDK passes a tool's `execute` besides its input, as far as this adapter reads it. Declared here rather
 * than taken from `ai`, whose `ToolExecutionOptions` became generic in 7: one type for both majors.
 */
export interface AiSdkExecution {
  /** The model's id for this tool call. */
  readonly toolCallId: string;
  readonly abortSignal?: AbortSignal | undefined;
  /** `ai` 7: this tool's entry of the generation's `toolsContext` (`toolsContext: { [toolName]: {...} }`). */
  readonly context?: unknown;
  /** `ai` 6: the generation's `experimental_context` (shared by every tool). */
  readonly experimental_context?: unknown;
}

/**
 * Resolves a value from the tool call: its id and its context (`toolsContext[toolName]` on `ai` 7,
 * `experimental_context` on `ai` 6).
 */
export type AiSdkResolver = Resolver<[options: AiSdkExecution]>;

/** Options of `ledgerAiTool`. */
export interface LedgerAiToolOptions {
  /**
   * The conversation (chat, thread, run) the call belongs to: with the tool call id it names the intent, so a
   * retried or resumed generation that replays the same tool call reuses the key. Must be persisted with the
   * conversation. A string, or a resolver.
   * @default reads `conversationId` from the tool's context (`toolsContext[toolName]` on ai 7, `experimental_context` on ai 6)
   */
  readonly conversationId?: string | AiSdkResolver;
  /**
   * Tenant that scopes keys.
   * @default reads `tenant` from the tool's context, else the ledger's `default`
   */
  readonly tenant?: string | AiSdkResolver;
  /**
   * End user on whose behalf the call runs.
   * @default reads `user` from the tool's context
   */
  readonly user?: string | AiSdkResolver;
  /**
   * Overrides the description the model sees.
   * @default the ledger tool's description
   */
  readonly description?: string;
  /**
   * The input's JSON Schema, for validators that cannot describe themselves.
   * @default derived from the ledger tool's input schema
   */
  readonly inputJsonSchema?: Record<string, unknown>;
}

/**
 * The context a generation gave this tool: ai 7 hands each tool its own entry of `toolsContext` as `context`
 * (undefined when the caller gave none); ai 6 has one `experimental_context` for all tools.
 */
function toolContext(options: AiSdkExecution): unknown {
  return options.context ?? options.experimental_context;
}

/** What `recordAiApprovals` needs of a tool this adapter made: the ledger tool and how its calls are keyed. */
export interface AiToolBinding {
  readonly ledgerTool: AdapterTool;
  /** The ledger's tenant and key of one tool call, as the tool's execute derives them. */
  readonly target: (execution: AiSdkExecution) => {
    readonly tenant: string | undefined;
    readonly key: string;
  };
}

const bindings = new WeakMap<object, AiToolBinding>();

/** The binding of a tool `ledgerAiTool` made, or undefined for any other tool. */
export function aiToolBinding(tool: unknown): AiToolBinding | undefined {
  return tool !== null && typeof tool === 'object' ? bindings.get(tool) : undefined;
}

/** Whether the history already holds an approval request for this tool call: the SDK is checking it again. */
function approvalRequested(messages: unknown, toolCallId: string): boolean {
  if (!Array.isArray(messages)) return false;
  return messages.some(
    (message) =>
      message?.role === 'assistant' &&
      Array.isArray(message.content) &&
      message.content.some(
        (part: { type?: unknown; toolCallId?: unknown }) =>
          part?.type === 'tool-approval-request' && part.toolCallId === toolCallId,
      ),
  );
}

/** The second argument of `needsApproval`, in both majors (ai 7: `context`; ai 6: `experimental_context`). */
interface ApprovalCheck {
  readonly toolCallId: string;
  readonly messages?: unknown;
  readonly context?: unknown;
  readonly experimental_context?: unknown;
}

const fromContext =
  (field: string): AiSdkResolver =>
  (options) =>
    stringField(toolContext(options), field);

/**
 * Wraps a ledger tool as a Vercel AI SDK (`ai` 6 or 7) `tool()`. The idempotency key is derived from the conversation id
 * and the model's tool call id, so the model never handles keys: a generation that is retried or resumed with
 * the same tool call gets the original result instead of running the action again, and the model reads a
 * sentence saying it was a replay.
 *
 * Ledger errors are thrown as the same `ToolLedgerError` (a `ToolFailure` stays one, with `final`, `reason` and
 * `details`) whose message speaks to the model (the SDK sends it back as the tool error); the developer's
 * message is its `cause`.
 */
export function ledgerAiTool(
  ledgerTool: AdapterTool,
  options: LedgerAiToolOptions = {},
): Tool<Record<string, unknown>, unknown> {
  const described = describeTool(ledgerTool, {
    description: options.description,
    inputJsonSchema: options.inputJsonSchema,
    hint: 'ledgerAiTool(tool, { inputJsonSchema })',
  });
  const name = described.name;
  const conversationId = resolverOf(options.conversationId, fromContext('conversationId'));
  const tenant = resolverOf(options.tenant, fromContext('tenant'));
  const user = resolverOf(options.user, fromContext('user'));
  const subject: TextSubject = {
    tool: name,
    kind: ledgerTool.kind,
    key: ledgerTool.kind === 'read' ? { kind: 'none' } : { kind: 'call' },
  };
  const notes = new ReplayNotes();

  const callContext = (execution: AiSdkExecution): CallContext & { key: string | undefined } => {
    let key: string | undefined;
    if (ledgerTool.kind !== 'read') {
      const conversation = conversationId(execution);
      if (conversation === undefined) {
        // Not a key from the tool call id alone: mock and some real providers reuse ids across conversations.
        throw new ToolLedgerError(
          'KEY_REQUIRED',
          `Tool "${name}" needs a conversation id to derive its idempotency key: pass ledgerAiTool(tool, { conversationId }), or give the generation toolsContext: { ${JSON.stringify(name)}: { conversationId } } (ai 7) or experimental_context: { conversationId } (ai 6).`,
        );
      }
      key = runnerKey(conversation, execution.toolCallId, name);
    }
    return {
      key,
      tenant: tenant(execution),
      user: user(execution),
      toolCallId: execution.toolCallId,
      signal: execution.abortSignal,
    };
  };
  // Reports of calls the approval check already ran (an input that needed no approval), by key.
  const held = new HeldReports();

  /**
   * The SDK's approval check. The first time it sees a tool call, the call goes to the ledger, which records the
   * fingerprint of these arguments and answers whether a person must decide: from then on no approval response
   * can make other arguments run. When the SDK checks again before running a call that was approved (the
   * history holds the request), the answer is yes: execute then asks the ledger, which runs the call only if the
   * decision recorded there (`recordAiApprovals`) approved it.
   */
  const needsApproval = async (input: unknown, check: ApprovalCheck): Promise<boolean> => {
    if (approvalRequested(check.messages, check.toolCallId)) return true;
    let context: ReturnType<typeof callContext>;
    try {
      context = callContext(check);
    } catch (error) {
      // No key: execute throws the same error, for the model.
      if (error instanceof ToolLedgerError) return false;
      throw error;
    }
    const registration = await registerCall(ledgerTool, input, context);
    if (registration.kind === 'answered' && context.key !== undefined)
      held.set(context.key, registration.report);
    return registration.kind === 'awaiting';
  };

  const made = tool<Record<string, unknown>, unknown>({
    ...(described.description === undefined ? {} : { description: described.description }),
    ...(described.title === undefined ? {} : { title: described.title }),
    // No validator here: the ledger tool validates, so bad input comes back as INPUT_INVALID with its code.
    inputSchema: jsonSchema<Record<string, unknown>>(described.schema),
    ...(hasApproval(ledgerTool) ? { needsApproval: needsApproval as never } : {}),
    async execute(input, executionOptions) {
      const execution = executionOptions as AiSdkExecution;
      try {
        const context = callContext(execution);
        const report =
          (context.key === undefined ? undefined : held.take(context.key)) ??
          (await ledgerTool.invoke(input, context));
        const notice = replayNotice(name, report);
        if (notice !== undefined) notes.set(execution.toolCallId, notice);
        return report.value;
      } catch (error) {
        if (!(error instanceof ToolLedgerError)) throw error;
        throw withModelMessage(error, errorText(error, subject));
      }
    },
    toModelOutput({ toolCallId, output }) {
      const json = JSON.stringify(output ?? null);
      const note = notes.take(toolCallId);
      return { type: 'text', value: note === undefined ? json : `${note}\n${json}` };
    },
  });
  bindings.set(made, {
    ledgerTool,
    target: (execution) => {
      const context = callContext(execution);
      return { tenant: context.tenant, key: context.key as string };
    },
  });
  return made;
}
