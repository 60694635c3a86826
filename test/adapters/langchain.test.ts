import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, type ToolMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLedger, deriveKey, type Ledger, type LedgerTool, ToolFailure } from '../../src/index.js';
import { ledgerLangChainTool } from '../../src/integrations/langchain/index.js';

let ledger: Ledger;
let sendEmail: LedgerTool<{ to: string }, { messageId: string }>;
const deliveries: Array<{ to: string; key: string | undefined; tenant: string }> = [];

beforeAll(async () => {
  ledger = await createLedger({ pglite: 'memory://', telemetry: false });
  sendEmail = ledger.tool({
    name: 'send_email',
    kind: 'mutation',
    description: 'Sends an email.',
    input: z.object({ to: z.string().email() }),
    handler: async (input, ctx) => {
      if (input.to.startsWith('blocked'))
        throw new ToolFailure('Recipient is blocked', { reason: 'blocked' });
      deliveries.push({ to: input.to, key: ctx.key, tenant: ctx.tenant });
      return { messageId: `m_${deliveries.length}` };
    },
  });
});

afterAll(async () => {
  await ledger?.close();
});

const calls = (...tool_calls: Array<{ id: string; args: Record<string, unknown> }>) =>
  new AIMessage({
    content: '',
    tool_calls: tool_calls.map((call) => ({ ...call, name: 'send_email', type: 'tool_call' as const })),
  });

/** A chat model of @langchain/core that answers from a script, one message per call; no network. */
class ScriptedChatModel extends BaseChatModel {
  constructor(private readonly script: AIMessage[]) {
    super({});
  }
  _llmType(): string {
    return 'scripted';
  }
  async _generate(): Promise<ChatResult> {
    const message = this.script.shift();
    if (!message) throw new Error('script exhausted');
    return { generations: [{ text: '', message }] };
  }
}

/** A tool-calling loop as an agent runs it: the fake chat model's tool calls, each answered by the tool. */
async function runLoop(
  responses: AIMessage[],
  configurable: Record<string, unknown>,
): Promise<ToolMessage[]> {
  const tool = ledgerLangChainTool(sendEmail);
  const model = new ScriptedChatModel([...responses]);
  const answers: ToolMessage[] = [];
  for (let turn = 0; turn < responses.length; turn++) {
    const reply = await model.invoke([new HumanMessage('email')]);
    for (const call of reply.tool_calls ?? []) {
      answers.push((await tool.invoke(call, { configurable })) as ToolMessage);
    }
  }
  return answers;
}

describe('ledgerLangChainTool through @langchain/core tool calls, offline', () => {
  it('publishes the input JSON Schema to the model, with no key argument', () => {
    const published = convertToOpenAITool(ledgerLangChainTool(sendEmail));
    expect(published.function).toMatchObject({
      name: 'send_email',
      description: 'Sends an email.',
      parameters: expect.objectContaining({
        type: 'object',
        properties: { to: expect.objectContaining({ type: 'string' }) },
        required: ['to'],
      }),
    });
  });

  it('derives the key from the thread and the tool call id, and replays a repeated tool call', async () => {
    const answers = await runLoop(
      [
        calls({ id: 'call_1', args: { to: 'ann@example.test' } }),
        calls({ id: 'call_1', args: { to: 'ann@example.test' } }),
      ],
      { thread_id: 'thread-1', tenant: 'acme' },
    );
    expect(deliveries).toEqual([
      {
        to: 'ann@example.test',
        key: deriveKey({ runId: 'thread-1', toolCallId: 'call_1', tool: 'send_email' }),
        tenant: 'acme',
      },
    ]);
    expect(answers[0]).toMatchObject({
      tool_call_id: 'call_1',
      content: '{"messageId":"m_1"}',
      artifact: { messageId: 'm_1' },
    });
    expect(answers[1]!.content).toMatch(
      /^Replayed: send_email already did this request at .+ and did not do it again; this is the original result\.\n\{"messageId":"m_1"\}$/,
    );
  });

  it('answers ledger errors with error ToolMessages the model can act on, the code in the artifact', async () => {
    const answers = await runLoop(
      [
        calls({ id: 'call_2', args: { to: 'bob@example.test' } }),
        calls({ id: 'call_2', args: { to: 'changed@example.test' } }),
        calls({ id: 'call_3', args: { to: 'not-an-email' } }),
        calls({ id: 'call_4', args: { to: 'blocked@example.test' } }),
      ],
      { thread_id: 'thread-2' },
    );
    const [, reused, invalid, failed] = answers;
    expect(reused).toMatchObject({ status: 'error', artifact: { error: { code: 'KEY_REUSED' } } });
    expect(reused!.content).toMatch(
      /^KEY_REUSED: This tool call was already carried out with different arguments\./,
    );
    expect(invalid!.content).toMatch(
      /^INPUT_INVALID: The arguments for send_email are invalid \(to: .+\)\. Nothing was done\./,
    );
    expect(failed).toMatchObject({
      status: 'error',
      artifact: { error: { code: 'TOOL_FAILED', reason: 'blocked', final: true } },
    });
  });

  it('refuses to derive a key without a thread or a tool call', async () => {
    const before = deliveries.length;
    const tool = ledgerLangChainTool(sendEmail);
    const answer = (await tool.invoke(
      { id: 'call_5', name: 'send_email', args: { to: 'c@example.test' }, type: 'tool_call' },
      {},
    )) as ToolMessage;
    expect(answer).toMatchObject({
      status: 'error',
      content: expect.stringMatching(/^KEY_REQUIRED: send_email was not run/),
    });
    await expect(
      tool.invoke({ to: 'c@example.test' }, { configurable: { thread_id: 't' } }),
    ).rejects.toMatchObject({
      code: 'KEY_REQUIRED',
    });
    expect(deliveries.length).toBe(before);
  });
});
