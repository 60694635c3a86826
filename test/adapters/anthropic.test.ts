import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLedger, deriveKey, type Ledger, type LedgerTool, ToolFailure } from '../../src/index.js';
import { answerToolUse, ledgerAnthropicTool } from '../../src/integrations/anthropic/index.js';

type Block = { type: string; [field: string]: unknown };

function message(content: Block[], stop: 'tool_use' | 'end_turn'): Record<string, unknown> {
  return {
    id: `msg_${Math.random().toString(36).slice(2)}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  };
}

const toolUse = (id: string, input: unknown, name = 'send_email'): Block => ({
  type: 'tool_use',
  id,
  name,
  input,
});
const say = (text: string) => message([{ type: 'text', text }], 'end_turn');

/** The SDK with its `fetch` answering from a script, recording every request body; no network. */
function scripted(...responses: Record<string, unknown>[]) {
  const bodies: Array<{ messages: Array<{ role: string; content: unknown }> }> = [];
  const client = new Anthropic({
    apiKey: 'test-key',
    maxRetries: 0,
    fetch: async (_url, init) => {
      bodies.push(JSON.parse(String(init?.body)));
      const next = responses.shift();
      if (!next) return new Response('script exhausted', { status: 500 });
      return new Response(JSON.stringify(next), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    },
  });
  return { client, bodies };
}

/** The tool_result blocks the runner sent back to the model: those of each request's last message, in order. */
function toolResults(bodies: Array<{ messages: Array<{ role: string; content: unknown }> }>): Block[] {
  return bodies.flatMap((body) => {
    const last = body.messages.at(-1)!;
    return last.role === 'user' && Array.isArray(last.content)
      ? (last.content as Block[]).filter((b) => b.type === 'tool_result')
      : [];
  });
}

let ledger: Ledger;
let sendEmail: LedgerTool<{ to: string }, { messageId: string }>;
const deliveries: Array<{ to: string; key: string | undefined; toolCallId: string | undefined }> = [];

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
      deliveries.push({ to: input.to, key: ctx.key, toolCallId: ctx.toolCallId });
      return { messageId: `m_${deliveries.length}` };
    },
  });
});

afterAll(async () => {
  await ledger?.close();
});

describe('ledgerAnthropicTool through the SDK tool runner, offline', () => {
  it('publishes the input schema, derives the key from the run and the tool_use id, and replays', async () => {
    const { client, bodies } = scripted(
      message([toolUse('toolu_1', { to: 'ann@example.test' })], 'tool_use'),
      // The same tool_use block again, as a run resumed from its saved messages serves it.
      message([toolUse('toolu_1', { to: 'ann@example.test' })], 'tool_use'),
      say('sent'),
    );
    const tool = ledgerAnthropicTool(sendEmail, { runId: 'run-1' });
    const final = await client.beta.messages
      .toolRunner({
        model: 'claude-test',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'email ann' }],
        tools: [tool],
      })
      .runUntilDone();
    expect(final.content).toEqual([{ type: 'text', text: 'sent' }]);
    expect((bodies[0] as unknown as { tools: unknown[] }).tools).toEqual([
      expect.objectContaining({
        name: 'send_email',
        description: 'Sends an email.',
        input_schema: expect.objectContaining({ type: 'object', required: ['to'] }),
      }),
    ]);
    expect(deliveries).toEqual([
      {
        to: 'ann@example.test',
        key: deriveKey({ runId: 'run-1', toolCallId: 'toolu_1', tool: 'send_email' }),
        toolCallId: 'toolu_1',
      },
    ]);
    const [first, again] = toolResults(bodies);
    expect(first).toMatchObject({ tool_use_id: 'toolu_1', content: '{"messageId":"m_1"}' });
    expect(first!.is_error).toBeFalsy();
    expect(again!.content).toMatch(
      /^Replayed: send_email already did this request at .+ and did not do it again; this is the original result\.\n\{"messageId":"m_1"\}$/,
    );
  });

  it('sends ledger errors back as is_error results the model can act on', async () => {
    const { client, bodies } = scripted(
      message([toolUse('toolu_2', { to: 'bob@example.test' })], 'tool_use'),
      message([toolUse('toolu_2', { to: 'changed@example.test' })], 'tool_use'),
      message([toolUse('toolu_3', { to: 'not-an-email' })], 'tool_use'),
      message([toolUse('toolu_4', { to: 'blocked@example.test' })], 'tool_use'),
      say('ok'),
    );
    await client.beta.messages
      .toolRunner({
        model: 'claude-test',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'email' }],
        tools: [ledgerAnthropicTool(sendEmail, { runId: 'run-2' })],
      })
      .runUntilDone();
    const [, reused, invalid, failed] = toolResults(bodies);
    expect(reused).toMatchObject({ is_error: true });
    expect(reused!.content).toMatch(
      /^KEY_REUSED: This tool call was already carried out with different arguments\./,
    );
    expect(invalid!.content).toMatch(
      /^INPUT_INVALID: The arguments for send_email are invalid \(to: .+\)\. Nothing was done\./,
    );
    expect(failed!.content).toMatch(
      /^TOOL_FAILED \(blocked\): Recipient is blocked\. send_email did not complete/,
    );
  });

  it('refuses to derive a key without a run id, and lets the application pass its own key', async () => {
    const before = deliveries.length;
    const tool = ledgerAnthropicTool(sendEmail);
    const refused = await answerToolUse([tool], {
      type: 'tool_use',
      id: 'toolu_5',
      name: 'send_email',
      input: { to: 'c@example.test' },
    } as never);
    expect(refused).toMatchObject({ tool_use_id: 'toolu_5', is_error: true });
    expect(refused.content).toMatch(/^KEY_REQUIRED: send_email was not run/);
    expect(deliveries.length).toBe(before);

    const own = ledgerAnthropicTool(sendEmail, { key: () => 'order-17-confirmation' });
    const answered = await answerToolUse([own], {
      type: 'tool_use',
      id: 'toolu_6',
      name: 'send_email',
      input: { to: 'c@example.test' },
    } as never);
    expect(answered.is_error).toBe(false);
    expect(deliveries.at(-1)).toMatchObject({ key: 'order-17-confirmation' });
    const unknown = await answerToolUse([own], {
      type: 'tool_use',
      id: 'x',
      name: 'nope',
      input: {},
    } as never);
    expect(unknown).toMatchObject({
      is_error: true,
      content: expect.stringContaining('Use one of: send_email'),
    });
  });
});
