import { type FunctionTool, type RunContext, tool } from '@openai/agents';
import { deriveKey } from '../../contract/derive-key.js';
import { ToolLedgerError } from '../../contract/errors.js';
import type { CallContext } from '../../contract/types.js';
import type { LedgerTool } from '../../middleware/tool.js';
import { errorText, type KeySource } from '../shared/error-text.js';
import { inputJsonSchema, withKeyArgument } from '../shared/json-schema.js';

/** What the SDK passes a tool besides its input: the tool call being executed, when there is one. */
export interface AgentsToolCall {
  readonly callId?: string | undefined;
}

/** Resolves a value from the run context (the object given to `run(agent, input, { context })`). */
export type AgentsResolver<TContext> = (
  runContext: RunContext<TContext> | undefined,
  toolCall: AgentsToolCall | undefined,
) => string | undefined;

/** Options of `ledgerFunctionTool`. */
export interface LedgerFunctionToolOptions<TContext = unknown> {
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
   * The conversation or run the call belongs to. With the tool call id it names the intent. Needed when tool
   * call ids are not globally unique (scripted models, some providers); OpenAI's are. Also scopes keys the
   * model supplies, so two conversations that both pick "1" never share a key.
   * @default reads `conversationId` from the run context
   */
  readonly conversationId?: string | AgentsResolver<TContext>;
  /**
   * Tenant that scopes keys.
   * @default reads `tenant` from the run context, else the ledger's `default`
   */
  readonly tenant?: string | AgentsResolver<TContext>;
  /**
   * End user on whose behalf the call runs.
   * @default reads `user` from the run context
   */
  readonly user?: string | AgentsResolver<TContext>;
  /**
   * Name of an optional argument through which the model may name the intent itself (to retry an earlier
   * request in a later turn, where the tool call id differs); `false` leaves keys to the runner alone. When the
   * model sends none, the key comes from the tool call id.
   * @default 'idempotency_key'
   */
  readonly keyArgument?: string | false;
  /**
   * Whether a human must approve each call before it runs (the SDK's `needsApproval`). A run interrupted for
   * approval and resumed from its serialized state keeps the tool call id, hence the key.
   * @default false
   */
  readonly needsApproval?: boolean;
  /**
   * The input's JSON Schema, for validators that cannot describe themselves.
   * @default derived from the ledger tool's input schema
   */
  readonly inputJsonSchema?: Record<string, unknown>;
}

function resolver<TContext>(
  option: string | AgentsResolver<TContext> | undefined,
  field: string,
): AgentsResolver<TContext> {
  if (typeof option === 'string') return () => option;
  if (option) return option;
  return (runContext) => {
    const context = runContext?.context as unknown;
    if (context === null || typeof context !== 'object') return undefined;
    const value = (context as Record<string, unknown>)[field];
    return typeof value === 'string' ? value : undefined;
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Wraps a ledger tool as an `@openai/agents` function tool. The SDK runs it through its own tool-invocation
 * path; the ledger validates the input and decides whether to execute or replay.
 *
 * The key is, in order: the key the model sent in the key argument (scoped to the conversation), or one derived
 * from the conversation id and the tool call id, so a resumed run, which replays the same tool call, reuses it.
 * Ledger errors reach the model as text it can act on, led by the stable code.
 */
export function ledgerFunctionTool<TContext = unknown>(
  ledgerTool: LedgerTool<never, unknown>,
  options: LedgerFunctionToolOptions<TContext> = {},
): FunctionTool<TContext> {
  const name = options.name ?? ledgerTool.name;
  const kind = ledgerTool.kind;
  const target = ledgerTool as unknown as LedgerTool<unknown, unknown>;
  const keyField = kind === 'read' ? false : (options.keyArgument ?? 'idempotency_key');
  const keySource: KeySource =
    keyField === false ? { kind: 'runner' } : { kind: 'argument', field: keyField };
  const conversationId = resolver(options.conversationId, 'conversationId');
  const tenant = resolver(options.tenant, 'tenant');
  const user = resolver(options.user, 'user');

  let schema = inputJsonSchema(
    name,
    ledgerTool.input,
    options.inputJsonSchema,
    'ledgerFunctionTool(tool, { inputJsonSchema })',
  );
  if (keyField !== false) {
    schema = withKeyArgument(
      name,
      schema,
      keyField,
      'Optional. Send it only to retry a request from an earlier turn: the same key returns the original result ' +
        'instead of repeating the action. A new or changed instruction needs a new key, or no key at all.',
      { required: false, hint: 'ledgerFunctionTool(tool, { keyArgument })' },
    );
  }

  return tool<never, TContext, unknown>({
    name,
    description: options.description ?? ledgerTool.description ?? '',
    // Not strict: strict mode would force the optional key argument, and the ledger validates the input anyway.
    parameters: schema as never,
    strict: false,
    needsApproval: options.needsApproval ?? false,
    async execute(
      input: unknown,
      runContext?: RunContext<TContext>,
      details?: { toolCall?: AgentsToolCall; signal?: AbortSignal },
    ) {
      const toolCall = details?.toolCall;
      const conversation = conversationId(runContext, toolCall);
      let key: string | undefined;
      // Anything but an object goes to the ledger as it came, so its validator reports it as INPUT_INVALID.
      let callInput: unknown = input;
      if (kind !== 'read') {
        let modelKey: unknown;
        if (keyField !== false && isRecord(input)) {
          const { [keyField]: sent, ...rest } = input;
          modelKey = sent;
          callInput = rest;
        }
        if (typeof modelKey === 'string' && modelKey.length > 0) {
          key =
            conversation === undefined
              ? modelKey
              : deriveKey({ runId: conversation, tool: name, step: `key:${modelKey}` });
        } else if (toolCall?.callId) {
          key = deriveKey({
            runId: conversation ?? 'openai-agents',
            toolCallId: toolCall.callId,
            tool: name,
          });
        } else if (modelKey !== undefined) {
          // Not a usable key: let the ledger refuse it with KEY_INVALID rather than silently deriving one.
          key = modelKey as string;
        }
      }
      const context: CallContext = {
        key,
        tenant: tenant(runContext, toolCall),
        user: user(runContext, toolCall),
        toolCallId: toolCall?.callId,
        signal: details?.signal,
      };
      return target.call(callInput, context);
    },
    errorFunction: (_runContext, error) => {
      if (error instanceof ToolLedgerError) return errorText(error, name, keySource);
      return `An error occurred while running the tool. Error: ${error instanceof Error ? error.message : String(error)}`;
    },
  }) as unknown as FunctionTool<TContext>;
}
