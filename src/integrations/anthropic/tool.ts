import type { BetaRunnableTool, BetaToolRunContext } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import type { BetaToolUseBlock } from '@anthropic-ai/sdk/resources/beta';
import { ToolLedgerError } from '../../contract/errors.js';
import type { CallContext } from '../../contract/types.js';
import {
  type AdapterTool,
  boundedKey,
  describeTool,
  isRecord,
  type Resolver,
  resolverOf,
  runnerKey,
} from '../shared/adapter-tool.js';
import { errorText, type KeyVoice, resultText } from '../shared/model-text.js';

/** The `tool_use` block a call serves: its id and the arguments the model sent. */
export interface AnthropicToolUse {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

/** Resolves a value from the `tool_use` block being served. */
export type AnthropicResolver = Resolver<[toolUse: AnthropicToolUse]>;

/** Options of `ledgerAnthropicTool`. */
export interface LedgerAnthropicToolOptions {
  /**
   * The run (conversation, thread) the calls belong to. With the `tool_use` id it names the intent, so a run
   * resumed from its saved messages, which serves the same `tool_use` block again, reuses the key. Must be the
   * id you persist the messages under. Required for mutations and jobs unless `key` is given.
   */
  readonly runId?: string | AnthropicResolver;
  /**
   * Your own key for a call, when the `tool_use` id does not name the intent: when a retry asks the model
   * again (a new `tool_use` id for the same request), derive the key from something that survives it, such as
   * a step of your workflow. Overrides the derived key when it returns a string.
   * @default derived from `runId` and the `tool_use` id
   */
  readonly key?: AnthropicResolver;
  /**
   * Tenant that scopes keys.
   * @default the ledger's `default`
   */
  readonly tenant?: string | AnthropicResolver;
  /**
   * End user on whose behalf the calls run.
   * @default none
   */
  readonly user?: string | AnthropicResolver;
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

const none: AnthropicResolver = () => undefined;

/**
 * Wraps a ledger tool for `@anthropic-ai/sdk`: a runnable tool for `client.beta.messages.toolRunner()`, whose
 * `run` also serves `tool_use` blocks in a loop of your own (see `answerToolUse`).
 *
 * The key is derived from the run id and the `tool_use` id, so the model never handles keys. That is safe when
 * the same `tool_use` block is what comes back on a retry: a run resumed from its saved messages, or a tool
 * result that was lost after the tool ran. A retry that asks the model again gets a new `tool_use` id, hence a
 * new key; pass `key` when such retries must not repeat the action. A replay tells the model so in its result;
 * ledger errors come back as `is_error` results the model can act on.
 */
export function ledgerAnthropicTool(
  ledgerTool: AdapterTool,
  options: LedgerAnthropicToolOptions = {},
): BetaRunnableTool<Record<string, unknown>> {
  const described = describeTool(ledgerTool, {
    name: options.name,
    description: options.description,
    inputJsonSchema: options.inputJsonSchema,
    hint: 'ledgerAnthropicTool(tool, { inputJsonSchema })',
  });
  const name = described.name;
  const kind = ledgerTool.kind;
  const runId = resolverOf(options.runId, none);
  const ownKey = options.key ?? none;
  const tenant = resolverOf(options.tenant, none);
  const user = resolverOf(options.user, none);
  const voice: KeyVoice = kind === 'read' ? { kind: 'none' } : { kind: 'call' };

  const keyFor = (toolUse: AnthropicToolUse): string | undefined => {
    if (kind === 'read') return undefined;
    const own = boundedKey(ownKey(toolUse), name);
    if (typeof own === 'string') return own;
    const run = runId(toolUse);
    if (run === undefined) {
      throw new ToolLedgerError(
        'KEY_REQUIRED',
        `Tool "${name}" needs a run id to derive its idempotency key from the tool_use id: pass ledgerAnthropicTool(tool, { runId }) or { key }.`,
      );
    }
    return runnerKey(run, toolUse.id, name);
  };

  return {
    type: 'custom',
    name,
    ...(described.description === undefined ? {} : { description: described.description }),
    input_schema: { ...described.schema, type: 'object' },
    // The ledger tool validates the arguments; only a non-object (which the API never sends) stops here.
    parse: (content: unknown) => {
      if (isRecord(content)) return content;
      const error = new ToolLedgerError('INPUT_INVALID', `Tool "${name}" takes an object of arguments.`, {
        issues: [{ message: 'expected an object of arguments' }],
      });
      throw new ToolError(errorText(error, { tool: name, kind, key: voice }));
    },
    async run(args: Record<string, unknown>, context?: BetaToolRunContext) {
      const toolUse: AnthropicToolUse = context?.toolUse ?? { id: '', name, input: args };
      try {
        const call: CallContext = {
          key: keyFor(toolUse),
          tenant: tenant(toolUse),
          user: user(toolUse),
          toolCallId: toolUse.id || undefined,
          signal: context?.signal ?? undefined,
        };
        const report = await ledgerTool.invoke(args, call);
        return resultText(name, report);
      } catch (error) {
        // The runner sends a ToolError's content back as an is_error tool_result.
        if (error instanceof ToolLedgerError) {
          throw new ToolError(errorText(error, { tool: name, kind, key: voice }));
        }
        throw error;
      }
    },
  };
}

/** A `tool_result` block for the next user message, in a loop of your own around `messages.create()`. */
export interface AnthropicToolResult {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error: boolean;
}

/**
 * Serves one `tool_use` block with the matching tool, for loops that call `messages.create()` themselves. An
 * unknown tool name is an `is_error` result naming the tools there are.
 */
export async function answerToolUse(
  tools: readonly BetaRunnableTool<Record<string, unknown>>[],
  toolUse: BetaToolUseBlock,
): Promise<AnthropicToolResult> {
  const tool = tools.find((candidate) => candidate.name === toolUse.name);
  const result = (content: string, isError: boolean): AnthropicToolResult => ({
    type: 'tool_result',
    tool_use_id: toolUse.id,
    content,
    is_error: isError,
  });
  if (tool === undefined) {
    return result(
      `There is no tool named "${toolUse.name}". Nothing was done. Use one of: ${tools.map((t) => t.name).join(', ')}.`,
      true,
    );
  }
  try {
    const input = tool.parse(toolUse.input);
    const content = await tool.run(input, { toolUse, toolUseBlock: toolUse });
    return result(typeof content === 'string' ? content : JSON.stringify(content), false);
  } catch (error) {
    if (error instanceof ToolError) {
      return result(typeof error.content === 'string' ? error.content : JSON.stringify(error.content), true);
    }
    throw error;
  }
}
