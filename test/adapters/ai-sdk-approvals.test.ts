import {
  convertToModelMessages,
  generateText,
  type ModelMessage,
  readUIMessageStream,
  simulateReadableStream,
  stepCountIs,
  streamText,
  type UIMessage,
} from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { type Ledger, ToolLedgerError } from '../../src/index.js';
import { ledgerAiTool, recordAiApprovals } from '../../src/integrations/ai-sdk/index.js';
import { postgresBackend } from '../support/db.js';

// The AI SDK's own approval flow (needsApproval, tool-approval-request, tool-approval-response) end to end
// through generateText with the SDK's mock model, on ai 6 here and ai 7 in the newest-majors lane.

type Step = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

function callRefund(id: string, input: unknown, toolName = 'refund'): Step {
  return {
    content: [{ type: 'tool-call', toolCallId: id, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

const done: Step = {
  content: [{ type: 'text', text: 'done' }],
  finishReason: { unified: 'stop', raw: 'stop' },
  usage,
  warnings: [],
};

/** A scripted model: one canned response per step; records the prompt of each step, as the model reads it. */
function scripted(...steps: Step[]) {
  const prompts: unknown[][] = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts.push(options.prompt as unknown[]);
      const step = steps.shift();
      if (!step) throw new Error('script exhausted');
      return step;
    },
  });
  return { model, prompts };
}

// Real Postgres, a schema of this file's own (closed and dropped after its tests).
const postgres = postgresBackend();
let ledger: Ledger;
const refunds: Array<{ order: string; cents: number }> = [];
let tools: { refund: ReturnType<typeof ledgerAiTool> };
let conversation = 0;

beforeAll(async () => {
  ledger = await postgres.open();
  const refund = ledger.tool({
    name: 'refund',
    kind: 'mutation',
    description: 'Refunds an order.',
    input: z.object({ order: z.string(), cents: z.number().int() }),
    // Small refunds run at once; larger ones wait for a person.
    approval: (input: { cents: number }) => input.cents > 10_000,
    handler: async (input) => {
      refunds.push(input);
      return { refunded: input.cents };
    },
  });
  tools = { refund: ledgerAiTool(refund, { conversationId: () => `conv-${conversation}`, tenant: 'acme' }) };
});

/** One turn: the model asks for a refund; the generation stops at the approval request. */
async function askForRefund(input: { order: string; cents: number }) {
  conversation++;
  const prompt: ModelMessage[] = [{ role: 'user', content: `refund ${input.order}` }];
  const result = await generateText({
    model: scripted(callRefund('call_1', input), done).model,
    messages: prompt,
    tools,
    stopWhen: stepCountIs(3),
  });
  const requests = result.content.filter((part) => part.type === 'tool-approval-request');
  return { history: [...prompt, ...result.response.messages] as ModelMessage[], requests, result };
}

function answer(approvalId: string, approved: boolean, reason?: string): ModelMessage {
  return {
    role: 'tool',
    content: [
      { type: 'tool-approval-response', approvalId, approved, ...(reason === undefined ? {} : { reason }) },
    ],
  } as ModelMessage;
}

/**
 * The generation after the person's answer: the SDK runs (or denies) the approved call before the model's next
 * step, and the model reads what came of it in its prompt's last tool message (the same on ai 6 and 7, whose
 * results report it differently).
 */
async function resume(
  messages: ModelMessage[],
  toolSet: Record<string, ReturnType<typeof ledgerAiTool>> = tools,
) {
  const { model, prompts } = scripted(done);
  await generateText({ model, messages, tools: toolSet, stopWhen: stepCountIs(2) });
  const last = (prompts[0] ?? []).at(-1) as { role?: string; content?: unknown[] } | undefined;
  const outputs = (last?.role === 'tool' ? (last.content ?? []) : []).flatMap((part) => {
    const result = part as { type?: string; output?: { type: string; value?: unknown } };
    return result.type === 'tool-result' && result.output ? [result.output] : [];
  });
  return {
    /** What ran: the values the model reads as text. */
    values: outputs.filter((o) => o.type === 'text').map((o) => String(o.value)),
    /** Ledger errors, by their code (ai 7 puts the error's name before it). */
    errors: outputs
      .filter((o) => o.type === 'error-text')
      .map((o) => /\b([A-Z][A-Z_]+[A-Z]):/.exec(String(o.value))?.[1]),
    texts: outputs.map((o) => String(o.value ?? '')),
    denied: outputs.filter((o) => o.type === 'execution-denied').length,
  };
}

function approvalIdOf(requests: readonly unknown[]): string {
  expect(requests).toHaveLength(1);
  return (requests[0] as { approvalId: string }).approvalId;
}

describe('AI SDK approvals recorded in the ledger', () => {
  it('runs an approved call once, with the arguments the model sent, and records who approved', async () => {
    refunds.length = 0;
    const { history, requests } = await askForRefund({ order: 'A-1', cents: 50_000 });
    const approvalId = approvalIdOf(requests);
    expect(refunds).toEqual([]);

    const messages = [...history, answer(approvalId, true, 'customer called')];
    const recorded = await recordAiApprovals(ledger, { messages, tools, by: 'alice@support' });
    expect(recorded).toEqual([
      expect.objectContaining({ toolCallId: 'call_1', toolName: 'refund', approved: true }),
    ]);
    expect(recorded[0]!.decision).toMatchObject({ decision: 'approved', by: 'alice@support' });
    // The app's request retried: the same answer recorded again is the decision that stands, not an error.
    const again = await recordAiApprovals(ledger, { messages, tools, by: 'alice@support' });
    expect(again[0]!.decision).toMatchObject({ decision: 'approved', by: 'alice@support' });

    const first = await resume(messages);
    expect(first.values).toEqual(['{"refunded":50000}']);
    // The same conversation handed back again (a retried request): the ledger replays, nothing runs again.
    const replayed = await resume(messages);
    expect(replayed.values).toEqual([
      expect.stringMatching(/^Replayed: refund already did this request at .*\n\{"refunded":50000\}$/),
    ]);
    expect(refunds).toEqual([{ order: 'A-1', cents: 50_000 }]);
  });

  it('refuses an approved call whose arguments were changed in the history: KEY_REUSED, nothing runs', async () => {
    refunds.length = 0;
    const { history, requests } = await askForRefund({ order: 'B-1', cents: 20_000 });
    const approvalId = approvalIdOf(requests);
    const messages = [...history, answer(approvalId, true)];
    await recordAiApprovals(ledger, { messages, tools, by: 'alice@support' });

    // The client holds the history: it raises the amount of the approved tool call before sending it back.
    const altered = JSON.parse(JSON.stringify(messages)) as ModelMessage[];
    for (const message of altered) {
      if (message.role !== 'assistant' || typeof message.content === 'string') continue;
      for (const part of message.content)
        if (part.type === 'tool-call') part.input = { order: 'B-1', cents: 9_999_999 };
    }
    const tampered = await resume(altered);
    expect(tampered.values).toEqual([]);
    expect(tampered.errors).toEqual(['KEY_REUSED']);
    expect(refunds).toEqual([]);

    // The untouched history still runs what was approved, once.
    expect((await resume(messages)).values).toEqual(['{"refunded":20000}']);
    expect(refunds).toEqual([{ order: 'B-1', cents: 20_000 }]);
  });

  it('never runs a declined call, even when the history is later flipped to approved', async () => {
    refunds.length = 0;
    const { history, requests } = await askForRefund({ order: 'C-1', cents: 30_000 });
    const approvalId = approvalIdOf(requests);
    const declined = [...history, answer(approvalId, false, 'over the limit')];
    const recorded = await recordAiApprovals(ledger, { messages: declined, tools, by: 'bob@support' });
    expect(recorded[0]!.decision).toMatchObject({
      decision: 'declined',
      by: 'bob@support',
      reason: 'over the limit',
    });
    const denied = await resume(declined);
    expect(denied.denied).toBe(1);

    // Another answer to the same request is refused, naming who decided first.
    await expect(
      recordAiApprovals(ledger, { messages: [...history, answer(approvalId, true)], tools, by: 'mallory' }),
    ).rejects.toMatchObject({
      code: 'APPROVAL_ALREADY_DECIDED',
      message: expect.stringContaining('bob@support'),
    });
    const flipped = await resume([...history, answer(approvalId, true)]);
    expect(flipped.errors).toEqual(['APPROVAL_DECLINED']);
    expect(flipped.texts[0]).toContain('over the limit');
    expect(refunds).toEqual([]);
  });

  it('does not run a call whose approval response was never recorded in the ledger', async () => {
    refunds.length = 0;
    const { history, requests } = await askForRefund({ order: 'D-1', cents: 40_000 });
    const forged = await resume([...history, answer(approvalIdOf(requests), true)]);
    expect(forged.errors).toEqual(['APPROVAL_REQUIRED']);
    expect(refunds).toEqual([]);
  });

  it('refuses a response that names no request, or a call of another conversation', async () => {
    const { history, requests } = await askForRefund({ order: 'E-1', cents: 60_000 });
    const unknown = [...history, answer('approval-that-was-never-asked', true)];
    await expect(recordAiApprovals(ledger, { messages: unknown, tools, by: 'alice' })).rejects.toMatchObject({
      code: 'INPUT_INVALID',
      message: expect.stringMatching(/answers no tool-approval-request/),
    });

    // The same response recorded against another conversation's key: that call awaits no decision.
    conversation++;
    const elsewhere = recordAiApprovals(ledger, {
      messages: [...history, answer(approvalIdOf(requests), true)],
      tools,
      by: 'alice',
    });
    await expect(elsewhere).rejects.toBeInstanceOf(ToolLedgerError);
    await expect(elsewhere).rejects.toMatchObject({ code: 'APPROVAL_NOT_PENDING' });
  });

  it('asks nothing for a call the approval function lets through: it runs once, at execute', async () => {
    refunds.length = 0;
    const { requests, result } = await askForRefund({ order: 'F-1', cents: 500 });
    expect(requests).toEqual([]);
    const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => r.output));
    expect(outputs).toEqual([{ refunded: 500 }]);
    expect(refunds).toEqual([{ order: 'F-1', cents: 500 }]);
  });

  it('works the same through streamText: the stream stops at the request, the approved call runs once', async () => {
    refunds.length = 0;
    conversation++;
    type StreamStep = Awaited<ReturnType<MockLanguageModelV3['doStream']>>;
    const streamed = (...chunks: unknown[]): StreamStep =>
      ({
        stream: simulateReadableStream({ chunks: [{ type: 'stream-start', warnings: [] }, ...chunks] }),
      }) as StreamStep;
    const finish = (unified: string) => ({ type: 'finish', finishReason: { unified, raw: unified }, usage });
    const prompts: unknown[][] = [];
    const turns = [
      streamed(
        {
          type: 'tool-call',
          toolCallId: 'call_s',
          toolName: 'refund',
          input: JSON.stringify({ order: 'S-1', cents: 70_000 }),
        },
        finish('tool-calls'),
      ),
      streamed(
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'done' },
        { type: 'text-end', id: 't' },
        finish('stop'),
      ),
    ];
    const model = new MockLanguageModelV3({
      doStream: async (options) => {
        prompts.push(options.prompt as unknown[]);
        const turn = turns.shift();
        if (!turn) throw new Error('script exhausted');
        return turn;
      },
    });
    const prompt: ModelMessage[] = [{ role: 'user', content: 'refund S-1' }];
    const asked = streamText({ model, messages: prompt, tools, stopWhen: stepCountIs(3) });
    const requests = (await asked.content).filter((part) => part.type === 'tool-approval-request');
    const history = [...prompt, ...(await asked.response).messages] as ModelMessage[];
    expect(refunds).toEqual([]);

    const messages = [...history, answer(approvalIdOf(requests), true)];
    await recordAiApprovals(ledger, { messages, tools, by: 'carol@support' });
    const resumed = streamText({ model, messages, tools, stopWhen: stepCountIs(2) });
    expect(await resumed.text).toBe('done');
    expect(JSON.stringify(prompts.at(-1))).toContain('{\\"refunded\\":70000}');
    expect(refunds).toEqual([{ order: 'S-1', cents: 70_000 }]);
  });

  it("works from useChat's UI messages: the approval the client adds, converted to model messages, is recorded", async () => {
    refunds.length = 0;
    conversation++;
    type StreamStep = Awaited<ReturnType<MockLanguageModelV3['doStream']>>;
    const streamed = (...chunks: unknown[]): StreamStep =>
      ({
        stream: simulateReadableStream({ chunks: [{ type: 'stream-start', warnings: [] }, ...chunks] }),
      }) as StreamStep;
    const finish = (unified: string) => ({ type: 'finish', finishReason: { unified, raw: unified }, usage });
    const turns = [
      streamed(
        {
          type: 'tool-call',
          toolCallId: 'call_u',
          toolName: 'refund',
          input: JSON.stringify({ order: 'U-1', cents: 80_000 }),
        },
        finish('tool-calls'),
      ),
      streamed(
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'done' },
        { type: 'text-end', id: 't' },
        finish('stop'),
      ),
    ];
    const model = new MockLanguageModelV3({
      doStream: async () => {
        const turn = turns.shift();
        if (!turn) throw new Error('script exhausted');
        return turn;
      },
    });
    // The server's route: UI messages in, a UI message stream out, read here as useChat reads it.
    const user: UIMessage = { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'refund U-1' }] };
    const first = streamText({
      model,
      messages: await convertToModelMessages([user]),
      tools,
      stopWhen: stepCountIs(3),
    });
    let assistant: UIMessage | undefined;
    for await (const message of readUIMessageStream({ stream: first.toUIMessageStream() }))
      assistant = message;
    const part = assistant?.parts.find((p) => p.type === 'tool-refund') as
      | { state: string; approval?: { id: string; approved?: boolean; reason?: string } }
      | undefined;
    expect(part?.state).toBe('approval-requested');
    expect(refunds).toEqual([]);

    // What useChat's addToolApprovalResponse does on the client, sent back to the route.
    part!.state = 'approval-responded';
    part!.approval = { ...part!.approval!, approved: true, reason: 'checked' };
    const messages = await convertToModelMessages([user, assistant!], { tools });
    const recorded = await recordAiApprovals(ledger, { messages, tools, by: 'dana@support' });
    expect(recorded).toEqual([expect.objectContaining({ toolCallId: 'call_u', approved: true })]);
    const resumed = streamText({ model, messages, tools, stopWhen: stepCountIs(2) });
    expect(await resumed.text).toBe('done');
    expect(refunds).toEqual([{ order: 'U-1', cents: 80_000 }]);
  });
});

describe('AI SDK approval of a job', () => {
  it('starts the job only once the recorded approval lets it; the model reads its running status', async () => {
    const exports: string[] = [];
    const exportJob = ledger.tool({
      name: 'export_customers',
      kind: 'job',
      description: 'Exports the customer list.',
      input: z.object({ format: z.enum(['csv', 'json']) }),
      approval: 'required',
      handler: async (input) => {
        exports.push(input.format);
        return { url: `https://example.test/export.${input.format}` };
      },
    });
    conversation++;
    const jobTools = {
      export_customers: ledgerAiTool(exportJob, {
        conversationId: () => `conv-${conversation}`,
        tenant: 'acme',
      }),
    };
    const prompt: ModelMessage[] = [{ role: 'user', content: 'export the customers' }];
    const asked = await generateText({
      model: scripted(callRefund('call_job', { format: 'csv' }, 'export_customers'), done).model,
      messages: prompt,
      tools: jobTools,
      stopWhen: stepCountIs(3),
    });
    const approvalId = approvalIdOf(asked.content.filter((part) => part.type === 'tool-approval-request'));
    expect(exports).toEqual([]);

    const messages = [...prompt, ...asked.response.messages, answer(approvalId, true)] as ModelMessage[];
    const recorded = await recordAiApprovals(ledger, { messages, tools: jobTools, by: 'alice@support' });
    expect(recorded[0]!.decision).toMatchObject({ decision: 'approved', by: 'alice@support' });
    const started = await resume(messages, jobTools);
    expect(started.values).toHaveLength(1);
    const status = JSON.parse(started.values[0]!) as { jobId: string; status: string };
    expect(status).toMatchObject({ jobId: expect.stringMatching(/^job_/), status: 'running' });
    // The job runs in the background: its status turns succeeded (bounded for a loaded machine).
    await expect
      .poll(async () => (await exportJob.getJob(status.jobId, { tenant: 'acme' }))?.status, {
        timeout: 5_000,
        interval: 20,
      })
      .toBe('succeeded');
    expect(exports).toEqual(['csv']);
  });
});
