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
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { Ledger } from '../../src/index.js';
import {
  approveInterruption,
  ledgerFunctionTool,
  rejectInterruption,
} from '../../src/integrations/openai-agents/index.js';
import { postgresBackend } from '../support/db.js';

// The Agents SDK's own approval flow (needsApproval, result.interruptions, state.approve, a serialized RunState)
// with the decision recorded in the ledger, through the SDK's run loop and a scripted model.

setTracingDisabled(true);

type Turn = AgentOutputItem[];

function callRefund(callId: string, args: unknown): Turn {
  return [
    { type: 'function_call', callId, name: 'refund', arguments: JSON.stringify(args), status: 'completed' },
  ];
}

const say = (text: string): Turn => [
  { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] },
];

class ScriptedModel implements Model {
  constructor(private readonly turns: Turn[]) {}
  async getResponse(_request: ModelRequest): Promise<ModelResponse> {
    const output = this.turns.shift();
    if (!output) throw new Error('script exhausted');
    return { usage: new Usage(), output };
  }
  // biome-ignore lint/correctness/useYield: the tests only use the non-streaming path
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not scripted');
  }
}

/** What the run told the model each tool returned. */
function toolOutputs(result: { newItems: ReadonlyArray<{ type: string }> }): string[] {
  return result.newItems.flatMap((item) => {
    if (item.type !== 'tool_call_output_item') return [];
    const output = (item as unknown as { output: unknown }).output;
    return [typeof output === 'string' ? output : JSON.stringify(output)];
  });
}

/** Turns every rejection recorded in a serialized run state into an approval; answers how many it turned. */
function flipApprovals(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let flipped = 0;
  const record = value as Record<string, unknown>;
  if (Array.isArray(record.rejected) && record.rejected.length > 0 && 'approved' in record) {
    record.approved = record.rejected;
    record.rejected = [];
    flipped++;
  }
  for (const child of Object.values(record)) flipped += flipApprovals(child);
  return flipped;
}

interface AppContext {
  conversationId: string;
  tenant: string;
  user: string;
}

// Real Postgres, a schema of this file's own (closed and dropped after its tests).
const postgres = postgresBackend();
let ledger: Ledger;
const refunds: Array<{ order: string; cents: number }> = [];
let refundTool: ReturnType<typeof ledgerFunctionTool<AppContext>>;
const payouts: Array<{ order: string; cents: number }> = [];
let payoutTool: ReturnType<typeof ledgerFunctionTool<AppContext>>;

beforeAll(async () => {
  ledger = await postgres.open();
  const refund = ledger.tool({
    name: 'refund',
    kind: 'mutation',
    input: z.object({ order: z.string(), cents: z.number().int() }),
    approval: 'required',
    handler: async (input) => {
      refunds.push(input);
      return { refunded: input.cents };
    },
  });
  refundTool = ledgerFunctionTool<AppContext>(refund);
  const payout = ledger.tool({
    name: 'payout',
    kind: 'mutation',
    input: z.object({ order: z.string(), cents: z.number().int() }),
    // Small payouts run at once; larger ones wait for a person.
    approval: (input: { cents: number }) => input.cents > 10_000,
    handler: async (input) => {
      payouts.push(input);
      return { paid: input.cents };
    },
  });
  payoutTool = ledgerFunctionTool<AppContext>(payout);
});

const agentWith = (...turns: Turn[]) =>
  new Agent<AppContext>({ name: 'support', model: new ScriptedModel(turns), tools: [refundTool] });

/** A run that stops at the approval of one refund; answers its state and interruption. */
async function interrupted(conversationId: string, args: Readonly<Record<string, unknown>>) {
  const result = await run(agentWith(callRefund('call_r', args), say('done')), 'refund it', {
    context: { conversationId, tenant: 'acme', user: 'u-1' },
  });
  expect(result.interruptions).toHaveLength(1);
  return { state: result.state, interruption: result.interruptions[0]! };
}

/** Resumes a serialized run state, as a server does with what a client sent back. */
async function resume(serialized: string) {
  const agent = agentWith(say('done'));
  return run(agent, await RunState.fromString(agent, serialized));
}

describe('Agents SDK interruptions recorded in the ledger', () => {
  it('approving an interruption records it; the resumed run executes the call once', async () => {
    refunds.length = 0;
    const { state, interruption } = await interrupted('conv-1', { order: 'A-1', cents: 50_000 });
    expect(refunds).toEqual([]);
    const decision = await approveInterruption(ledger, state, interruption, { by: 'alice', reason: 'ok' });
    expect(decision).toMatchObject({ decision: 'approved', by: 'alice' });
    const saved = state.toString();

    const resumed = await resume(saved);
    expect(toolOutputs(resumed)).toEqual([JSON.stringify({ refunded: 50_000 })]);
    // The same saved state resumed a second time (a retry): replayed from the ledger, not run again.
    const retried = await resume(saved);
    expect(toolOutputs(retried)[0]).toMatch(/^Replayed: refund already did this request/);
    expect(refunds).toEqual([{ order: 'A-1', cents: 50_000 }]);
  });

  it('a run state altered on the client cannot approve other arguments: the fingerprints differ', async () => {
    refunds.length = 0;
    const { state, interruption } = await interrupted('conv-2', { order: 'B-1', cents: 50_000 });
    await approveInterruption(ledger, state, interruption, { by: 'alice' });
    const saved = state.toString();
    // The client raises the approved amount wherever the serialized state carries the call's arguments, and, on
    // @openai/agents 0.20, in the SDK's own fingerprint of the approved invocation too (numbers are written
    // there as 5e4), so that the SDK's check passes: only the ledger stands between the edit and the handler.
    const altered = saved.replaceAll('50000', '90000').replaceAll('number:5e4', 'number:9e4');
    expect(altered).not.toBe(saved);

    const tampered = await resume(altered);
    expect(toolOutputs(tampered)).toEqual([expect.stringMatching(/^KEY_REUSED: /)]);
    expect(refunds).toEqual([]);
    expect(toolOutputs(await resume(saved))).toEqual([JSON.stringify({ refunded: 50_000 })]);
    expect(refunds).toEqual([{ order: 'B-1', cents: 50_000 }]);
  });

  it('a rejected call never runs, even from a state flipped to approved on the client', async () => {
    refunds.length = 0;
    const { state, interruption } = await interrupted('conv-3', { order: 'C-1', cents: 70_000 });
    const decision = await rejectInterruption(ledger, state, interruption, { by: 'bob', reason: 'fraud' });
    expect(decision).toMatchObject({ decision: 'declined', by: 'bob', reason: 'fraud' });
    const saved = state.toString();
    expect(toolOutputs(await resume(saved))).toEqual(['fraud']);

    // An approval put into the serialized state instead of the rejection.
    const parsed: unknown = JSON.parse(saved);
    expect(flipApprovals(parsed)).toBeGreaterThan(0);
    const flipped = await resume(JSON.stringify(parsed));
    expect(toolOutputs(flipped)).toEqual([expect.stringMatching(/^APPROVAL_DECLINED/)]);
    expect(refunds).toEqual([]);
  });

  it('an approval given in the run state alone, never recorded in the ledger, runs nothing', async () => {
    refunds.length = 0;
    const { state, interruption } = await interrupted('conv-4', { order: 'D-1', cents: 80_000 });
    state.approve(interruption);
    expect(toolOutputs(await resume(state.toString()))).toEqual([
      expect.stringMatching(/^APPROVAL_REQUIRED/),
    ]);
    expect(refunds).toEqual([]);
  });

  it('refuses an anonymous decision and leaves the run state undecided', async () => {
    const { state, interruption } = await interrupted('conv-5', { order: 'E-1', cents: 90_000 });
    await expect(approveInterruption(ledger, state, interruption, { by: '' })).rejects.toMatchObject({
      code: expect.stringMatching(/^APPROVAL_/),
    });
    expect(state.getInterruptions()).toHaveLength(1);
    // Nothing approved in the state: the approval entries (whatever their shape) name no call.
    expect(state.toString()).not.toMatch(/"approved":\["call_r"\]/);
  });

  it('asks nothing for a call the approval function lets through: it runs once, with no interruption', async () => {
    const agent = new Agent<AppContext>({
      name: 'support',
      model: new ScriptedModel([
        [
          {
            type: 'function_call',
            callId: 'call_p',
            name: 'payout',
            arguments: '{"order":"P-1","cents":500}',
            status: 'completed',
          },
        ],
        say('done'),
      ]),
      tools: [payoutTool],
    });
    const result = await run(agent, 'pay it', {
      context: { conversationId: 'conv-6', tenant: 'acme', user: 'u-1' },
    });
    expect(result.interruptions ?? []).toEqual([]);
    expect(toolOutputs(result)).toEqual([JSON.stringify({ paid: 500 })]);
    expect(payouts).toEqual([{ order: 'P-1', cents: 500 }]);
  });

  it('binds the decision to the key the model sent, scoped to the conversation', async () => {
    refunds.length = 0;
    const args = { order: 'G-1', cents: 60_000, idempotency_key: 'refund-g1' };
    const { state, interruption } = await interrupted('conv-7', args);
    await approveInterruption(ledger, state, interruption, { by: 'alice' });
    expect(toolOutputs(await resume(state.toString()))).toEqual([JSON.stringify({ refunded: 60_000 })]);
    // The same key sent in another conversation is another call: it waits for its own approval.
    const other = await interrupted('conv-8', args);
    other.state.approve(other.interruption);
    expect(toolOutputs(await resume(other.state.toString()))).toEqual([
      expect.stringMatching(/^APPROVAL_REQUIRED/),
    ]);
    expect(refunds).toEqual([{ order: 'G-1', cents: 60_000 }]);
  });
});
