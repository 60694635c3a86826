import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLedger, deriveKey, type Ledger, type LedgerTool, ToolFailure } from '../../src/index.js';
import { ledgerAiTool } from '../../src/integrations/ai-sdk/index.js';
import { ATTR } from '../../src/telemetry/vocabulary.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';

type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
type LanguageModelV3CallOptions = Parameters<MockLanguageModelV3['doGenerate']>[0];

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

function toolCalls(
  ...calls: Array<{ id: string; input: unknown; name?: string }>
): LanguageModelV3GenerateResult {
  return {
    content: calls.map((call) => ({
      type: 'tool-call' as const,
      toolCallId: call.id,
      toolName: call.name ?? 'send_email',
      input: JSON.stringify(call.input),
    })),
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

const done: LanguageModelV3GenerateResult = {
  content: [{ type: 'text', text: 'done' }],
  finishReason: { unified: 'stop', raw: 'stop' },
  usage,
  warnings: [],
};

/** A scripted model: one canned response per step, and a record of what it was sent. */
function scripted(...steps: LanguageModelV3GenerateResult[]) {
  const seen: LanguageModelV3CallOptions[] = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      seen.push(options);
      const step = steps.shift();
      if (!step) throw new Error('script exhausted');
      return step;
    },
  });
  return { model, seen };
}

/**
 * Generation options that hand each named tool the context: ai 7 reads `toolsContext[toolName]`, ai 6 reads the
 * one `experimental_context`; each major ignores the other's option. Typed loosely because each major's types
 * know only its own.
 */
function toolContext(names: readonly string[], context: Record<string, string>): object {
  return { experimental_context: context, toolsContext: Object.fromEntries(names.map((n) => [n, context])) };
}

let ledger: Ledger;
let sendEmail: LedgerTool<{ to: string; body: string }, { messageId: string }>;
const deliveries: Array<{
  to: string;
  key: string | undefined;
  tenant: string;
  toolCallId: string | undefined;
}> = [];

beforeAll(async () => {
  ledger = await createLedger({ pglite: 'memory://', telemetry: false });
  sendEmail = ledger.tool({
    name: 'send_email',
    kind: 'mutation',
    description: 'Sends an email.',
    input: z.object({ to: z.string().email(), body: z.string() }),
    handler: async (input, ctx) => {
      deliveries.push({ to: input.to, key: ctx.key, tenant: ctx.tenant, toolCallId: ctx.toolCallId });
      return { messageId: `m_${deliveries.length}` };
    },
  });
});

afterAll(async () => {
  await ledger?.close();
});

describe('ledgerAiTool through generateText and the SDK mock model', () => {
  it('publishes the input JSON Schema and no key argument', async () => {
    const { model, seen } = scripted(done);
    await generateText({
      model,
      prompt: 'hi',
      tools: { send_email: ledgerAiTool(sendEmail, { conversationId: 'c' }) },
    });
    const published = seen[0]!.tools![0]!;
    expect(published).toMatchObject({ type: 'function', name: 'send_email', description: 'Sends an email.' });
    expect((published as { inputSchema: { required: string[] } }).inputSchema.required).toEqual([
      'to',
      'body',
    ]);
    expect(JSON.stringify(published)).not.toContain('idempotency');
  });

  it('derives the key from conversation + tool call id, and replays a repeated call', async () => {
    deliveries.length = 0;
    const args = { to: 'ann@example.test', body: 'Your invoice' };
    const { model, seen } = scripted(
      toolCalls({ id: 'call_1', input: args }),
      // The same tool call again, as a retried or resumed generation would send it.
      toolCalls({ id: 'call_1', input: args }),
      done,
    );
    const result = await generateText({
      model,
      prompt: 'email ann',
      tools: { send_email: ledgerAiTool(sendEmail) },
      stopWhen: stepCountIs(5),
      ...toolContext(['send_email'], { conversationId: 'conv-42', tenant: 'acme' }),
    });
    expect(result.text).toBe('done');
    expect(deliveries).toEqual([
      {
        to: 'ann@example.test',
        key: deriveKey({ runId: 'conv-42', toolCallId: 'call_1', tool: 'send_email' }),
        tenant: 'acme',
        toolCallId: 'call_1',
      },
    ]);
    const outputs = result.steps.flatMap((step) => step.toolResults.map((r) => r.output));
    expect(outputs).toEqual([{ messageId: 'm_1' }, { messageId: 'm_1' }]);
    expect(seen).toHaveLength(3);
    // The model reads the replay as one: a sentence before the original result.
    expect(JSON.stringify(seen[2]!.prompt)).toMatch(
      /Replayed: send_email already did this request at [^"]+ and did not do it again; this is the original result\.\\n\{\\"messageId\\":\\"m_1\\"\}/,
    );

    // The same call id in another conversation is another intent.
    const other = scripted(toolCalls({ id: 'call_1', input: args }), done);
    await generateText({
      model: other.model,
      prompt: 'email ann',
      tools: { send_email: ledgerAiTool(sendEmail, { conversationId: 'conv-43', tenant: 'acme' }) },
      stopWhen: stepCountIs(3),
    });
    expect(deliveries).toHaveLength(2);
  });

  it('sends ledger errors back to the model as tool errors it can act on, with the code kept', async () => {
    const { model, seen } = scripted(
      toolCalls({ id: 'call_7', input: { to: 'bob@example.test', body: 'a' } }),
      toolCalls({ id: 'call_7', input: { to: 'bob@example.test', body: 'changed' } }),
      toolCalls({ id: 'call_8', input: { to: 'not-an-email', body: 'a' } }),
      done,
    );
    const result = await generateText({
      model,
      prompt: 'email bob',
      tools: { send_email: ledgerAiTool(sendEmail, { conversationId: 'conv-err' }) },
      stopWhen: stepCountIs(5),
    });
    const errors = result.steps.flatMap((step) =>
      step.content
        .filter((part) => part.type === 'tool-error')
        .map((part) => part.error as { code: string; message: string }),
    );
    expect(errors.map((e) => e.code)).toEqual(['KEY_REUSED', 'INPUT_INVALID']);
    expect(errors[0]!.message).toMatch(
      /Nothing was done again\. If the user wants the changed request, make a new tool call/,
    );
    // What the model sees on its next step.
    const lastPrompt = JSON.stringify(seen[3]!.prompt);
    expect(lastPrompt).toContain('KEY_REUSED');
    expect(lastPrompt).toContain('INPUT_INVALID');
  });

  it('throws a ToolFailure as a ToolFailure, with final, reason and details kept', async () => {
    const charge = ledger.tool({
      name: 'charge_card',
      kind: 'mutation',
      input: z.object({ cents: z.number() }),
      handler: async () => {
        throw new ToolFailure('Card declined', { reason: 'card_declined', details: { retryIn: 'never' } });
      },
    });
    const { model } = scripted(toolCalls({ id: 'call_c', input: { cents: 5 }, name: 'charge_card' }), done);
    const result = await generateText({
      model,
      prompt: 'charge',
      tools: { charge_card: ledgerAiTool(charge, { conversationId: 'conv-fail' }) },
      stopWhen: stepCountIs(3),
    });
    const part = result.steps[0]!.content.find((p) => p.type === 'tool-error') as { error: unknown };
    expect(part.error).toBeInstanceOf(ToolFailure);
    expect(part.error).toMatchObject({
      code: 'TOOL_FAILED',
      final: true,
      reason: 'card_declined',
      details: { retryIn: 'never' },
      message: expect.stringMatching(
        /^TOOL_FAILED \(card_declined\): Card declined\. charge_card did not complete/,
      ),
      cause: expect.objectContaining({ message: 'Card declined' }),
    });
  });

  it('refuses to guess a key without a conversation id', async () => {
    const { model } = scripted(toolCalls({ id: 'call_9', input: { to: 'c@example.test', body: 'x' } }), done);
    const before = deliveries.length;
    const result = await generateText({
      model,
      prompt: 'x',
      tools: { send_email: ledgerAiTool(sendEmail) },
      stopWhen: stepCountIs(3),
    });
    const error = result.steps[0]!.content.find((part) => part.type === 'tool-error');
    expect((error as { error: { code: string } }).error.code).toBe('KEY_REQUIRED');
    expect(deliveries.length).toBe(before);
  });
});

describe('ledgerAiTool with telemetry on and no key-hash secret configured', () => {
  it('puts the deriveKey key raw on the span and the log record, so support finds the call by it', async () => {
    // Prepare: no secret in the environment or the options; a real SDK with in-memory exporters
    const saved = process.env.TOOL_LEDGER_KEY_HASH_SECRET;
    delete process.env.TOOL_LEDGER_KEY_HASH_SECRET;
    const harness = new TelemetryHarness();
    const observed = await createLedger({ pglite: 'memory://', telemetry: harness.providers() });
    try {
      const refund = observed.tool({
        name: 'refund_order',
        kind: 'mutation',
        input: z.object({ order: z.string() }),
        handler: async (input) => ({ refunded: input.order }),
      });
      const { model } = scripted(
        toolCalls({ id: 'call_7', name: 'refund_order', input: { order: 'ORD-20261201-000123' } }),
        done,
      );

      // Act
      await generateText({
        model,
        prompt: 'refund it',
        tools: { refund_order: ledgerAiTool(refund, { conversationId: 'conv-77', tenant: 'acme' }) },
        stopWhen: stepCountIs(3),
      });

      // Assess
      const key = deriveKey({ runId: 'conv-77', toolCallId: 'call_7', tool: 'refund_order' });
      const spans = harness.finishedSpans().filter((span) => span.name === 'execute_tool refund_order');
      expect(spans).toHaveLength(1);
      expect(spans[0]!.attributes).toMatchObject({
        [ATTR.IDEMPOTENCY_KEY]: key,
        [ATTR.GEN_AI_TOOL_CALL_ID]: 'call_7',
        [ATTR.OUTCOME]: 'executed',
      });
      expect(spans[0]!.attributes).not.toHaveProperty(ATTR.IDEMPOTENCY_KEY_HASH);
      const records = harness.logRecords();
      expect(records).toHaveLength(1);
      expect(records[0]!.attributes).toMatchObject({ [ATTR.IDEMPOTENCY_KEY]: key, [ATTR.TENANT_ID]: 'acme' });
      expect(records[0]!.attributes).not.toHaveProperty(ATTR.IDEMPOTENCY_KEY_HASH);
    } finally {
      await observed.close();
      await harness.shutdown();
      if (saved !== undefined) process.env.TOOL_LEDGER_KEY_HASH_SECRET = saved;
    }
  });
});
