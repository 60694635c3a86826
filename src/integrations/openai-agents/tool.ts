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
import { HeldReports, hasApproval, registerCall } from '../shared/approvals.js';
import { errorText, type KeyVoice, resultText, wasReplayed } from '../shared/model-text.js';

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
   * Whether a human must approve each call before it runs (the SDK's `needsApproval`), for a ledger tool without
   * `approval`: the approval then lives in the run state only. A ledger tool with `approval` needs no setting
   * here: the ledger decides, and the decision is recorded with `approveInterruption`/`rejectInterruption`. A
   * run interrupted for approval and resumed from its serialized state keeps the tool call id, hence the key.
   * @default false (true in effect for a ledger tool with `approval`, when the ledger says so)
   */
  readonly needsApproval?: boolean;
  /**
   * The input's JSON Schema, for validators that cannot describe themselves.
   * @default derived from the ledger tool's input schema
   */
  readonly inputJsonSchema?: Record<string, unknown>;
}

/** The ledger's view of one tool call: its key, the input without the key argument, and how to name the key. */
interface KeyedCall {
  readonly context: CallContext;
  readonly callInput: unknown;
  readonly voice: KeyVoice;
}

/** What `approveInterruption` needs of a tool this adapter made: the ledger tool and how its calls are keyed. */
export interface AgentsToolBinding {
  readonly ledgerTool: AdapterTool;
  readonly keyed: (
    input: unknown,
    runContext: RunContext<unknown> | undefined,
    toolCall: AgentsToolCall | undefined,
  ) => KeyedCall;
}

const bindings = new WeakMap<object, AgentsToolBinding>();

/** The binding of a tool `ledgerFunctionTool` made, or undefined for any other tool. */
export function agentsToolBinding(tool: unknown): AgentsToolBinding | undefined {
  return tool !== null && typeof tool === 'object' ? bindings.get(tool) : undefined;
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

  /** The key, in order: the model's key argument (scoped to the conversation), else the tool call's own. */
  const keyed = (
    input: unknown,
    runContext: RunContext<TContext> | undefined,
    toolCall: AgentsToolCall | undefined,
  ): KeyedCall => {
    const conversation = conversationId(runContext, toolCall);
    let key: string | undefined;
    let voice: KeyVoice = kind === 'read' ? { kind: 'none' } : { kind: 'call' };
    // Anything but an object goes to the ledger as it came, so its validator reports it as INPUT_INVALID.
    let callInput: unknown = input;
    if (kind !== 'read') {
      let modelKey: unknown;
      if (keyField !== false && isRecord(input)) {
        const { [keyField]: sent, ...rest } = input;
        modelKey = sent;
        callInput = rest;
      }
      if (modelKey !== undefined && keyField !== false) voice = { kind: 'argument', field: keyField };
      try {
        boundedKey(modelKey, name);
      } catch (error) {
        if (error instanceof ToolLedgerError) voices.set(error, voice);
        throw error;
      }
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
    };
    return { context, callInput, voice };
  };
  // Reports of calls the approval check already ran (an input that needed no approval), by key.
  const held = new HeldReports();

  /**
   * The SDK asks once per tool call, before any approval is in the run state: the call goes to the ledger, which
   * records the fingerprint of these arguments and answers whether a person must decide. A run state approved
   * later (on the client, altered or not) can then only run these arguments: the ledger compares fingerprints.
   */
  const ledgerApproval = async (
    runContext: RunContext<TContext>,
    input: unknown,
    callId: string | undefined,
  ): Promise<boolean> => {
    let call: KeyedCall;
    try {
      call = keyed(input, runContext, { callId });
    } catch (error) {
      if (error instanceof ToolLedgerError) return false;
      throw error;
    }
    const registration = await registerCall(ledgerTool, call.callInput, call.context);
    if (registration.kind === 'answered' && typeof call.context.key === 'string')
      held.set(call.context.key, registration.report);
    return registration.kind === 'awaiting';
  };

  const made = tool<never, TContext, unknown>({
    name,
    description: described.description ?? '',
    // Not strict: strict mode would force the optional key argument, and the ledger validates the input anyway.
    parameters: described.schema as never,
    strict: false,
    needsApproval: hasApproval(ledgerTool) ? (ledgerApproval as never) : (options.needsApproval ?? false),
    async execute(
      input: unknown,
      runContext?: RunContext<TContext>,
      details?: { toolCall?: AgentsToolCall; signal?: AbortSignal },
    ) {
      const call = keyed(input, runContext, details?.toolCall);
      try {
        const key = call.context.key;
        const report =
          (typeof key === 'string' ? held.take(key) : undefined) ??
          (await ledgerTool.invoke(call.callInput, { ...call.context, signal: details?.signal }));
        // The SDK hands the model the tool's output as text; a replay says so first.
        return wasReplayed(report.outcome) ? resultText(name, report) : report.value;
      } catch (error) {
        if (error instanceof ToolLedgerError) voices.set(error, call.voice);
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
  bindings.set(made, { ledgerTool, keyed: keyed as AgentsToolBinding['keyed'] });
  return made;
}
