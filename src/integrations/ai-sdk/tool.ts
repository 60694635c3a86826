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

  return tool<Record<string, unknown>, unknown>({
    ...(described.description === undefined ? {} : { description: described.description }),
    ...(described.title === undefined ? {} : { title: described.title }),
    // No validator here: the ledger tool validates, so bad input comes back as INPUT_INVALID with its code.
    inputSchema: jsonSchema<Record<string, unknown>>(described.schema),
    async execute(input, executionOptions) {
      const execution = executionOptions as AiSdkExecution;
      try {
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
        const context: CallContext = {
          key,
          tenant: tenant(execution),
          user: user(execution),
          toolCallId: execution.toolCallId,
          signal: execution.abortSignal,
        };
        const report = await ledgerTool.invoke(input, context);
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
}
