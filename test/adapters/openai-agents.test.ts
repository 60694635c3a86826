import {
  Agent,
  type AgentOutputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  RunState,
  run,
  setTracingDisabled,
  Usage,
} from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLedger, deriveKey, type Ledger, type LedgerTool, ToolFailure } from '../../src/index.js';
import { ledgerFunctionTool } from '../../src/integrations/openai-agents/index.js';

setTracingDisabled(true);

type Turn = AgentOutputItem[];

function callTool(callId: string, args: unknown, name = 'send_email'): Turn {
  return [{ type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' }];
}

function say(text: string): Turn {
  return [
    {
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text }],
    },
  ];
}

/** Implements the SDK's Model interface from a script of turns; records each request. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly turns: Turn[]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const output = this.turns.shift();
    if (!output) throw new Error('script exhausted');
    return { usage: new Usage(), output };
  }

  // biome-ignore lint/correctness/useYield: the tests only use the non-streaming path
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not scripted');
  }
}

/** Everything the run told the model a tool returned, in order. */
function toolOutputs(result: { newItems: ReadonlyArray<{ type: string }> }): string[] {
  return result.newItems.flatMap((item) => {
    if (item.type !== 'tool_call_output_item') return [];
    const output = (item as unknown as { output: unknown }).output;
    return [typeof output === 'string' ? output : JSON.stringify(output)];
  });
}

let ledger: Ledger;
let sendEmail: LedgerTool<{ to: string }, { messageId: string }>;
const deliveries: Array<{ to: string; key: string | undefined; tenant: string; user: string | undefined }> =
  [];

beforeAll(async () => {
  ledger = await createLedger({ pglite: 'memory://', telemetry: false });
  sendEmail = ledger.tool({
    name: 'send_email',
    kind: 'mutation',
    description: 'Sends an email.',
    input: z.object({ to: z.string() }),
    handler: async (input, ctx) => {
      if (input.to === 'blocked@example.test')
        throw new ToolFailure('Recipient is blocked.', { reason: 'blocked' });
      deliveries.push({ to: input.to, key: ctx.key, tenant: ctx.tenant, user: ctx.user });
      return { messageId: `m_${deliveries.length}` };
    },
  });
});

afterAll(async () => {
  await ledger?.close();
});

interface AppContext {
  conversationId: string;
  tenant: string;
  user: string;
}

describe('ledgerFunctionTool through the Agents SDK run loop with a scripted model', () => {
  it('publishes the input schema with an optional key argument', async () => {
    const model = new ScriptedModel([say('ok')]);
    const agent = new Agent({ name: 'mailer', model, tools: [ledgerFunctionTool(sendEmail)] });
    await run(agent, 'hi');
    const published = model.requests[0]!.tools[0] as unknown as {
      name: string;
      parameters: { required: string[]; properties: Record<string, unknown> };
      strict: boolean;
    };
    expect(published.name).toBe('send_email');
    expect(published.parameters.required).toEqual(['to']);
    expect(published.parameters.properties).toHaveProperty('idempotency_key');
    expect(published.strict).toBe(false);
  });

  it('keys by the tool call id and takes tenant and user from the run context', async () => {
    deliveries.length = 0;
    const context = { conversationId: 'conv-1', tenant: 'acme', user: 'u-1' };
    const mailer = (model: ScriptedModel) =>
      new Agent<AppContext>({ name: 'mailer', model, tools: [ledgerFunctionTool<AppContext>(sendEmail)] });
    const result = await run(
      mailer(new ScriptedModel([callTool('call_a', { to: 'ann@example.test' }), say('sent')])),
      'email ann',
      { context },
    );
    // The whole turn is retried (the worker died before the run was saved) and the model repeats the same tool
    // call. A repeat inside one run never reaches the tool on @openai/agents 0.20, which suppresses a call id it
    // has already answered; across runs only the ledger knows, and it replays.
    const retried = await run(
      mailer(new ScriptedModel([callTool('call_a', { to: 'ann@example.test' }), say('sent')])),
      'email ann',
      { context },
    );
    expect(result.finalOutput).toBe('sent');
    expect(retried.finalOutput).toBe('sent');
    expect(deliveries).toEqual([
      {
        to: 'ann@example.test',
        key: deriveKey({ runId: 'conv-1', toolCallId: 'call_a', tool: 'send_email' }),
        tenant: 'acme',
        user: 'u-1',
      },
    ]);
    const [first] = toolOutputs(result);
    const [again] = toolOutputs(retried);
    expect(JSON.parse(first!)).toEqual({ messageId: 'm_1' });
    // The repeated call replays, and the model reads so before the original result.
    expect(again).toMatch(
      /^Replayed: send_email already did this request at .+ and did not do it again; this is the original result\.\n\{"messageId":"m_1"\}$/,
    );
  });

  it('reuses the key when an interrupted run is resumed from its serialized state, even twice', async () => {
    deliveries.length = 0;
    const tool = ledgerFunctionTool<AppContext>(sendEmail, { needsApproval: true });
    const script = () => new ScriptedModel([callTool('call_r', { to: 'rita@example.test' }), say('done')]);
    const context = { conversationId: 'conv-r', tenant: 'acme', user: 'u-2' };

    const first = await run(
      new Agent<AppContext>({ name: 'mailer', model: script(), tools: [tool] }),
      'email rita',
      {
        context,
      },
    );
    expect(first.interruptions).toHaveLength(1);
    const saved = first.state.toString();

    // Two workers resume the same saved state (a retry after a crash): the action runs once.
    for (let i = 0; i < 2; i++) {
      const agent = new Agent<AppContext>({ name: 'mailer', model: script(), tools: [tool] });
      const state = await RunState.fromString(agent, saved);
      state.approve(state.getInterruptions()[0]!);
      const resumed = await run(agent, state);
      expect(resumed.finalOutput).toBe('done');
    }
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.key).toBe(deriveKey({ runId: 'conv-r', toolCallId: 'call_r', tool: 'send_email' }));
  });

  it('uses a key the model supplies, scoped to the conversation', async () => {
    deliveries.length = 0;
    const model = new ScriptedModel([
      callTool('call_1', { to: 'bo@example.test', idempotency_key: 'email-bo-1' }),
      // A later turn retries the same request under a new call id but the same key.
      callTool('call_2', { to: 'bo@example.test', idempotency_key: 'email-bo-1' }),
      say('ok'),
    ]);
    const agent = new Agent<AppContext>({
      name: 'mailer',
      model,
      tools: [ledgerFunctionTool<AppContext>(sendEmail)],
    });
    await run(agent, 'email bo', { context: { conversationId: 'conv-2', tenant: 'acme', user: 'u-1' } });
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.key).toBe(
      deriveKey({ runId: 'conv-2', tool: 'send_email', step: 'key:email-bo-1' }),
    );
  });

  it('tells the model what to do about ledger errors, led by the code', async () => {
    const context = { conversationId: 'conv-3', tenant: 'acme', user: 'u-1' };
    const mailer = (model: ScriptedModel) =>
      new Agent<AppContext>({ name: 'mailer', model, tools: [ledgerFunctionTool<AppContext>(sendEmail)] });
    await run(
      mailer(new ScriptedModel([callTool('call_x', { to: 'cy@example.test' }), say('ok')])),
      'email',
      {
        context,
      },
    );
    // A later run reuses the call id with other arguments (the SDK refuses that only within one run).
    const result = await run(
      mailer(
        new ScriptedModel([
          callTool('call_x', { to: 'dee@example.test' }),
          callTool('call_y', { to: 42 }),
          callTool('call_z', { to: 'blocked@example.test' }),
          say('ok'),
        ]),
      ),
      'email',
      { context },
    );
    const outputs = toolOutputs(result);
    // The model sent no key: the error speaks of the tool call, not of an idempotency_key it never saw.
    expect(outputs[0]).toMatch(
      /^KEY_REUSED: This tool call was already carried out with different arguments\./,
    );
    expect(outputs[0]).not.toContain('idempotency_key');
    expect(outputs[1]).toMatch(/^INPUT_INVALID: .*to: /);
    expect(outputs[2]).toMatch(
      /^TOOL_FAILED \(blocked\): Recipient is blocked\. send_email did not complete this request, and this is final for this tool call\./,
    );
  });
});
