import { type FunctionTool, type RunContext, tool } from '@openai/agents';
import { deriveKey } from '../../contract/derive-key.js';
import { ToolLedgerError } from '../../contract/errors.js';
import type { CallContext } from '../../contract/types.js';
import {
  type AdapterTool,
  boundedKey,
  describeTool,
  isRecord,
  resolverOf,
  runnerKey,
  stringField,
} from '../shared/adapter-tool.js';
import { errorText, type KeyVoice, resultText } from '../shared/model-text.js';

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

function fromRunContext<TContext>(field: string): AgentsResolver<TContext> {
  return (runContext) => stringField(runContext?.context, field);
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
  ledgerTool: AdapterTool,
  options: LedgerFunctionToolOptions<TContext> = {},
): FunctionTool<TContext> {
  const kind = ledgerTool.kind;
  const keyField = kind === 'read' ? false : (options.keyArgument ?? 'idempotency_key');
  const described = describeTool(ledgerTool, {
    name: options.name,
    description: options.description,
    inputJsonSchema: options.inputJsonSchema,
    hint: 'ledgerFunctionTool(tool, { inputJsonSchema, keyArgument })',
    keyArgument:
      keyField === false
        ? undefined
        : {
            field: keyField,
            description:
              'Optional. Send it only to retry a request from an earlier turn: the same key returns the original result ' +
              'instead of repeating the action. A new or changed instruction needs a new key, or no key at all.',
            required: false,
          },
  });
  const name = described.name;
  const conversationId = resolverOf(options.conversationId, fromRunContext<TContext>('conversationId'));
  const tenant = resolverOf(options.tenant, fromRunContext<TContext>('tenant'));
  const user = resolverOf(options.user, fromRunContext<TContext>('user'));
  // How each failed call's key came about, so its error names the key the way the model knows it: a key the
  // model sent is "this idempotency_key"; one derived from the call id is "this tool call".
  const voices = new WeakMap<object, KeyVoice>();

  return tool<never, TContext, unknown>({
    name,
    description: described.description ?? '',
    // Not strict: strict mode would force the optional key argument, and the ledger validates the input anyway.
    parameters: described.schema as never,
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
      let voice: KeyVoice = kind === 'read' ? { kind: 'none' } : { kind: 'call' };
      // Anything but an object goes to the ledger as it came, so its validator reports it as INPUT_INVALID.
      let callInput: unknown = input;
      try {
        if (kind !== 'read') {
          let modelKey: unknown;
          if (keyField !== false && isRecord(input)) {
            const { [keyField]: sent, ...rest } = input;
            modelKey = sent;
            callInput = rest;
          }
          if (modelKey !== undefined && keyField !== false) voice = { kind: 'argument', field: keyField };
          boundedKey(modelKey, name);
          if (typeof modelKey === 'string' && modelKey.length > 0) {
            key =
              conversation === undefined
                ? modelKey
                : deriveKey({ runId: conversation, tool: name, step: `key:${modelKey}` });
          } else if (modelKey !== undefined) {
            // Not a usable key: let the ledger refuse it with KEY_INVALID rather than silently deriving one.
            key = modelKey as string;
          } else {
            key = runnerKey(conversation ?? 'openai-agents', toolCall?.callId, name);
          }
        }
        const context: CallContext = {
          key,
          tenant: tenant(runContext, toolCall),
          user: user(runContext, toolCall),
          toolCallId: toolCall?.callId,
          signal: details?.signal,
        };
        const report = await ledgerTool.invoke(callInput, context);
        // The SDK hands the model the tool's output as text; a replay says so first.
        return report.outcome === 'executed' ? report.value : resultText(name, report);
      } catch (error) {
        if (error instanceof ToolLedgerError) voices.set(error, voice);
        throw error;
      }
    },
    errorFunction: (_runContext, error) => {
      if (error instanceof ToolLedgerError) {
        return errorText(error, { tool: name, kind, key: voices.get(error) ?? { kind: 'call' } });
      }
      return `An error occurred while running the tool. Error: ${error instanceof Error ? error.message : String(error)}`;
    },
  });
}
