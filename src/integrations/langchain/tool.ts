import { ToolMessage } from '@langchain/core/messages';
import { DynamicStructuredTool, type ToolRunnableConfig } from '@langchain/core/tools';
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
import { withModelMessage } from '../shared/model-error.js';
import { errorPayload, errorText, resultText, type TextSubject } from '../shared/model-text.js';
import { publishedSchema } from '../shared/published-schema.js';

/** Resolves a value from the run config of the call (its `configurable`, the tool call). */
export type LangChainResolver = Resolver<[config: ToolRunnableConfig]>;

/** Options of `ledgerLangChainTool`. */
export interface LedgerLangChainToolOptions {
  /**
   * The conversation (thread) the call belongs to: with the tool call id it names the intent, so a graph
   * resumed from its checkpoint, which runs the same tool call again, reuses the key.
   * @default `configurable.thread_id`, else `configurable.conversationId`
   */
  readonly conversationId?: string | LangChainResolver;
  /**
   * Tenant that scopes keys.
   * @default `configurable.tenant`, else the ledger's `default`
   */
  readonly tenant?: string | LangChainResolver;
  /**
   * End user on whose behalf the call runs.
   * @default `configurable.user`
   */
  readonly user?: string | LangChainResolver;
  /**
   * The tool name the model sees.
   * @default the ledger tool's name
   */
  readonly name?: string;
  /**
   * The description the model sees.
   * @default the ledger tool's description
   */
  readonly description?: string;
  /**
   * The input's JSON Schema, for validators that cannot describe themselves.
   * @default derived from the ledger tool's input schema
   */
  readonly inputJsonSchema?: Record<string, unknown>;
}

const fromConfigurable =
  (...fields: string[]): LangChainResolver =>
  (config) => {
    for (const field of fields) {
      const value = stringField(config.configurable, field);
      if (value !== undefined) return value;
    }
    return undefined;
  };

/**
 * Wraps a ledger tool as a `@langchain/core` structured tool. Invoked with a tool call (as agents and
 * `ToolNode` do), it answers with a `ToolMessage`: the value as JSON content (after a sentence saying so when it
 * is a replay) with the value itself as `artifact`, or, for a ledger error, text the model can act on with
 * `status: 'error'` and the error's JSON as `artifact`. The key is derived from the thread and the tool call id.
 * Invoked with plain arguments there is no tool call: it returns the value and throws ledger errors, and
 * mutations need a key it cannot derive, so they answer `KEY_REQUIRED`.
 */
export function ledgerLangChainTool(
  ledgerTool: AdapterTool,
  options: LedgerLangChainToolOptions = {},
): DynamicStructuredTool {
  const described = describeTool(ledgerTool, {
    name: options.name,
    description: options.description,
    inputJsonSchema: options.inputJsonSchema,
    hint: 'ledgerLangChainTool(tool, { inputJsonSchema })',
  });
  const name = described.name;
  const kind = ledgerTool.kind;
  const conversationId = resolverOf(options.conversationId, fromConfigurable('thread_id', 'conversationId'));
  const tenant = resolverOf(options.tenant, fromConfigurable('tenant'));
  const user = resolverOf(options.user, fromConfigurable('user'));
  const subject: TextSubject = {
    tool: name,
    kind,
    key: kind === 'read' ? { kind: 'none' } : { kind: 'call' },
  };

  return new DynamicStructuredTool({
    name,
    description: described.description ?? '',
    // A zod object that publishes the exact JSON Schema and accepts any object: the ledger tool validates, so bad
    // arguments come back as INPUT_INVALID text instead of LangChain's parsing exception.
    schema: publishedSchema(described.schema),
    func: async (input: unknown, _runManager, config?: ToolRunnableConfig) => {
      const runConfig: ToolRunnableConfig = config ?? {};
      const toolCallId = runConfig.toolCall?.id;
      try {
        let key: string | undefined;
        if (kind !== 'read') {
          const conversation = conversationId(runConfig);
          if (conversation === undefined || toolCallId === undefined) {
            throw new ToolLedgerError(
              'KEY_REQUIRED',
              `Tool "${name}" derives its idempotency key from the thread and the tool call id: invoke it with a tool call, and pass configurable: { thread_id } or ledgerLangChainTool(tool, { conversationId }).`,
            );
          }
          key = runnerKey(conversation, toolCallId, name);
        }
        const context: CallContext = {
          key,
          tenant: tenant(runConfig),
          user: user(runConfig),
          toolCallId,
          signal: runConfig.signal,
        };
        const report = await ledgerTool.invoke(input, context);
        if (toolCallId === undefined) return report.value;
        return new ToolMessage({
          tool_call_id: toolCallId,
          name,
          content: resultText(name, report),
          artifact: report.value,
        });
      } catch (error) {
        if (!(error instanceof ToolLedgerError)) throw error;
        const text = errorText(error, subject);
        if (toolCallId === undefined) throw withModelMessage(error, text);
        return new ToolMessage({
          tool_call_id: toolCallId,
          name,
          content: text,
          status: 'error',
          artifact: { error: errorPayload(error) },
        });
      }
    },
  });
}
