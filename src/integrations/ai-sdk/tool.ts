import { jsonSchema, type Tool, type ToolExecutionOptions, tool } from 'ai';
import { deriveKey } from '../../contract/derive-key.js';
import { ToolLedgerError } from '../../contract/errors.js';
import type { CallContext } from '../../contract/types.js';
import type { LedgerTool } from '../../middleware/tool.js';
import { errorText, type KeySource } from '../shared/error-text.js';
import { inputJsonSchema } from '../shared/json-schema.js';

/** Resolves a value from the tool call (its id, messages and the `experimental_context` of the generation). */
export type AiSdkResolver = (options: ToolExecutionOptions) => string | undefined;

/** Options of `ledgerAiTool`. */
export interface LedgerAiToolOptions {
  /**
   * The conversation (chat, thread, run) the call belongs to: with the tool call id it names the intent, so a
   * retried or resumed generation that replays the same tool call reuses the key. Must be persisted with the
   * conversation. A string, or a resolver.
   * @default reads `conversationId` from `experimental_context`
   */
  readonly conversationId?: string | AiSdkResolver;
  /**
   * Tenant that scopes keys.
   * @default reads `tenant` from `experimental_context`, else the ledger's `default`
   */
  readonly tenant?: string | AiSdkResolver;
  /**
   * End user on whose behalf the call runs.
   * @default reads `user` from `experimental_context`
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

function fromContext(field: string): AiSdkResolver {
  return (options) => {
    const context = options.experimental_context;
    if (context === null || typeof context !== 'object') return undefined;
    const value = (context as Record<string, unknown>)[field];
    return typeof value === 'string' ? value : undefined;
  };
}

function resolver(option: string | AiSdkResolver | undefined, field: string): AiSdkResolver {
  if (typeof option === 'string') return () => option;
  return option ?? fromContext(field);
}

const RUNNER_KEY: KeySource = { kind: 'runner' };

/**
 * Wraps a ledger tool as a Vercel AI SDK (v6) `tool()`. The idempotency key is derived from the conversation id
 * and the model's tool call id with `deriveKey`, so the model never handles keys: a generation that is retried or
 * resumed with the same tool call gets the original result instead of running the action again.
 *
 * Ledger errors are thrown as `ToolLedgerError`s whose message speaks to the model (the SDK sends it back as the
 * tool error) and whose `code` stays stable for programs reading the `tool-error` parts.
 */
export function ledgerAiTool(
  ledgerTool: LedgerTool<never, unknown>,
  options: LedgerAiToolOptions = {},
): Tool<Record<string, unknown>, unknown> {
  const name = ledgerTool.name;
  const target = ledgerTool as unknown as LedgerTool<unknown, unknown>;
  const conversationId = resolver(options.conversationId, 'conversationId');
  const tenant = resolver(options.tenant, 'tenant');
  const user = resolver(options.user, 'user');
  const schema = inputJsonSchema(
    name,
    ledgerTool.input,
    options.inputJsonSchema,
    'ledgerAiTool(tool, { inputJsonSchema })',
  );
  const description = options.description ?? ledgerTool.description;

  return tool<Record<string, unknown>, unknown>({
    ...(description === undefined ? {} : { description }),
    ...(ledgerTool.title === undefined ? {} : { title: ledgerTool.title }),
    // No validator here: the ledger tool validates, so bad input comes back as INPUT_INVALID with its code.
    inputSchema: jsonSchema<Record<string, unknown>>(schema as Parameters<typeof jsonSchema>[0]),
    async execute(input, execution) {
      let key: string | undefined;
      if (ledgerTool.kind !== 'read') {
        const conversation = conversationId(execution);
        if (conversation === undefined) {
          throw new ToolLedgerError(
            'KEY_REQUIRED',
            `Tool "${name}" needs a conversation id to derive its idempotency key: pass ledgerAiTool(tool, { conversationId }) or experimental_context: { conversationId }.`,
          );
        }
        key = deriveKey({ runId: conversation, toolCallId: execution.toolCallId, tool: name });
      }
      const context: CallContext = {
        key,
        tenant: tenant(execution),
        user: user(execution),
        toolCallId: execution.toolCallId,
        signal: execution.abortSignal,
      };
      try {
        return await target.call(input, context);
      } catch (error) {
        if (!(error instanceof ToolLedgerError)) throw error;
        throw new ToolLedgerError(error.code, errorText(error, name, RUNNER_KEY), {
          cause: error,
          retryable: error.retryable,
          ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
          ...(error.conflictReason === undefined ? {} : { conflictReason: error.conflictReason }),
          ...(error.issues === undefined ? {} : { issues: error.issues }),
        });
      }
    },
  });
}
