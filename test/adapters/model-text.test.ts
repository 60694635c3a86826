// The spec of what a model reads from every adapter: one row per outcome and error code, each driven through
// the real adapter (its SDK's own call path where it has one) with a real ledger. A handler that throws a
// ledger error of a code stands in for the codes a test cannot provoke on demand (a lost database, a lost
// lease); the adapter cannot tell the difference. Each text must say what happened, whether anything was done,
// and what to do next with this tool's argument names, and never name an API of this library.

import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport as InMemoryTransportV1 } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  InMemoryTransport as InMemoryTransportV2,
  McpServer as McpServerV2,
} from '@modelcontextprotocol/server';
import { RunContext } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  type ApprovalDecision,
  createLedger,
  ErrorCode,
  type Ledger,
  ToolFailure,
  ToolLedgerError,
} from '../../src/index.js';
import { ledgerAiTool } from '../../src/integrations/ai-sdk/index.js';
import { answerToolUse, ledgerAnthropicTool } from '../../src/integrations/anthropic/index.js';
import { ledgerLangChainTool } from '../../src/integrations/langchain/index.js';
import { registerMcpTool } from '../../src/integrations/mcp/index.js';
import { ledgerFunctionTool } from '../../src/integrations/openai-agents/index.js';
import type { AdapterTool } from '../../src/integrations/shared/adapter-tool.js';

// ---------------------------------------------------------------------------------------------------------------
// The spec. `{tool}` is the tool's name, `{key}` its key argument. "argument": the model sent the key in an
// argument (MCP; OpenAI Agents when the model sends one). "call": the runner derived the key from the tool call
// (AI SDK, Anthropic, LangChain, OpenAI Agents by default). "read": a read tool, which has no key.
// ---------------------------------------------------------------------------------------------------------------

type Voice = 'argument' | 'call' | 'read';

interface Row {
  readonly name: string;
  readonly error: () => ToolLedgerError;
  readonly argument: string;
  readonly call: string;
  /** Only for codes a read tool can meet. */
  readonly read?: string;
}

const SETUP = 'Do not retry; tell the user that this tool is not set up correctly on the server.';

/** The call an approval error names (the key in its detail is what the ledger stored, shown as it is). */
const APPROVAL_CALL = { tenant: 'acme', tool: 'refund', key: 'refund-7' } as const;

function decided(decision: 'approved' | 'declined', reason?: string): ApprovalDecision {
  return {
    decision,
    by: 'ana@example.com',
    at: new Date('2026-12-05T08:00:00Z'),
    fingerprint: 'f'.repeat(64),
    ...(reason === undefined ? {} : { reason }),
  };
}

const ROWS: readonly Row[] = [
  {
    name: 'KEY_REQUIRED',
    error: () => new ToolLedgerError('KEY_REQUIRED', 'no key'),
    argument:
      'KEY_REQUIRED: {tool} was not run: it changes things and needs the "{key}" argument. Nothing was done. Call it again with "{key}" set to a new unique string for this request (for example a UUID), and send that same value again only to retry this exact request.',
    call: `KEY_REQUIRED: {tool} was not run: it changes things, and no idempotency key came with this call (the application supplies it, not you). Nothing was done. ${SETUP}`,
  },
  {
    name: 'KEY_INVALID',
    error: () => new ToolLedgerError('KEY_INVALID', 'bad key'),
    argument:
      'KEY_INVALID: The "{key}" you sent is not usable: it must be a non-empty string of printable characters, at most 255 long. Nothing was done. Call {tool} again with a valid "{key}", for example a new UUID.',
    call: `KEY_INVALID: {tool} was not run: the idempotency key made for this call is not usable. Nothing was done. ${SETUP}`,
  },
  {
    name: 'CONTEXT_INVALID',
    error: () => new ToolLedgerError('CONTEXT_INVALID', 'bad tenant'),
    argument:
      'CONTEXT_INVALID: {tool} was not run: the account or user this call is made for is not valid on the server. Nothing was done. Do not retry; tell the user their account could not be identified.',
    call: 'CONTEXT_INVALID: {tool} was not run: the account or user this call is made for is not valid on the server. Nothing was done. Do not retry; tell the user their account could not be identified.',
    read: 'CONTEXT_INVALID: {tool} was not run: the account or user this call is made for is not valid on the server. Nothing was done. Do not retry; tell the user their account could not be identified.',
  },
  {
    name: 'INPUT_INVALID',
    error: () =>
      new ToolLedgerError('INPUT_INVALID', 'bad input', {
        issues: [{ message: 'expected a string', path: ['to'] }],
      }),
    argument:
      'INPUT_INVALID: The arguments for {tool} are invalid (to: expected a string). Nothing was done. Fix those arguments and call {tool} again; you may keep the same "{key}".',
    call: 'INPUT_INVALID: The arguments for {tool} are invalid (to: expected a string). Nothing was done. Fix those arguments and call {tool} again.',
    read: 'INPUT_INVALID: The arguments for {tool} are invalid (to: expected a string). Nothing was done. Fix those arguments and call {tool} again.',
  },
  {
    name: 'KEY_REUSED (other arguments)',
    error: () => new ToolLedgerError('KEY_REUSED', 'reused', { conflictReason: 'params_mismatch' }),
    argument:
      'KEY_REUSED: This "{key}" was already used for a request with different arguments. Nothing was done. If this is a new or changed request, call {tool} again with a new "{key}"; send an earlier "{key}" only to retry that exact request with its original arguments.',
    call: 'KEY_REUSED: This tool call was already carried out with different arguments. Nothing was done again. If the user wants the changed request, make a new tool call for it.',
  },
  {
    name: 'KEY_REUSED (other user)',
    error: () => new ToolLedgerError('KEY_REUSED', 'reused', { conflictReason: 'user_mismatch' }),
    argument:
      'KEY_REUSED: This "{key}" was already used by a different user. Nothing was done. Call {tool} again with a new "{key}".',
    call: 'KEY_REUSED: This tool call was already carried out for a different user. Nothing was done. Make a new tool call if the user wants this request.',
  },
  {
    name: 'IN_PROGRESS',
    error: () => new ToolLedgerError('IN_PROGRESS', 'busy', { retryAfterMs: 1500 }),
    argument:
      'IN_PROGRESS: An earlier call of {tool} with this "{key}" is still running. This call did nothing. Wait about 2 s, then call {tool} again with the same arguments and the same "{key}" to get its result; a new "{key}" could make the action happen twice.',
    call: 'IN_PROGRESS: This request is already being carried out by an earlier run of the same tool call. This call did nothing. Do not repeat it as a new tool call, or the action may happen twice; tell the user it is in progress.',
  },
  {
    name: 'LEDGER_UNAVAILABLE',
    error: () => new ToolLedgerError('LEDGER_UNAVAILABLE', 'db down'),
    argument:
      'LEDGER_UNAVAILABLE: The server could not record this call of {tool}, so it is not known whether the action happened. Wait a few seconds, then call {tool} again with the same arguments and the same "{key}": the action will not happen twice.',
    call: 'LEDGER_UNAVAILABLE: The server could not record this call of {tool}, so it is not known whether the action happened. Do not repeat it as a new tool call, or it may happen twice; tell the user to try again later.',
  },
  {
    name: 'LEASE_LOST',
    error: () => new ToolLedgerError('LEASE_LOST', 'lease'),
    argument:
      'LEASE_LOST: This call of {tool} stopped before finishing because another worker took the request over, so it is not known yet whether the action happened. Call {tool} again with the same arguments and the same "{key}" to get the result: the action will not happen twice.',
    call: 'LEASE_LOST: This call of {tool} stopped before finishing because another worker took the request over, so it is not known yet whether the action happened. Do not repeat it as a new tool call; tell the user it is still being handled.',
  },
  {
    name: 'RESULT_INVALID',
    error: () => new ToolLedgerError('RESULT_INVALID', 'not json'),
    argument:
      'RESULT_INVALID: {tool} ran, but its result was refused as invalid, so the action may have happened. Calling it again with the same arguments and the same "{key}" returns this same error. Do not retry; tell the user the action needs checking.',
    call: 'RESULT_INVALID: {tool} ran, but its result was refused as invalid, so the action may have happened. Calling it again with the same arguments returns this same error. Do not retry; tell the user the action needs checking.',
  },
  {
    name: 'TOOL_FAILED (final)',
    error: () => new ToolFailure('Card declined', { reason: 'card_declined' }),
    argument:
      'TOOL_FAILED (card_declined): Card declined. {tool} did not complete this request, and this is final: calling again with the same "{key}" returns this same failure. If the user wants to try again (for example with changed details), call {tool} with a new "{key}".',
    call: 'TOOL_FAILED (card_declined): Card declined. {tool} did not complete this request, and this is final for this tool call. If the user wants to try again (for example with changed details), make a new tool call.',
    read: 'TOOL_FAILED (card_declined): Card declined. Nothing was changed: {tool} only reads. Call it again only if something has changed.',
  },
  {
    name: 'TOOL_FAILED (not final)',
    error: () => new ToolFailure('Gateway busy', { final: false }),
    argument:
      'TOOL_FAILED: Gateway busy. {tool} did not complete this request, and nothing was recorded as done. You may call {tool} again with the same arguments and the same "{key}".',
    call: 'TOOL_FAILED: Gateway busy. {tool} did not complete this request, and nothing was recorded as done. You may call {tool} again with the same arguments.',
  },
  {
    name: 'CONFIG_INVALID',
    error: () => new ToolLedgerError('CONFIG_INVALID', 'bad config'),
    argument: `CONFIG_INVALID: {tool} was not run. Nothing was done. ${SETUP}`,
    call: `CONFIG_INVALID: {tool} was not run. Nothing was done. ${SETUP}`,
    read: `CONFIG_INVALID: {tool} was not run. Nothing was done. ${SETUP}`,
  },
  {
    name: 'LEDGER_CLOSED',
    error: () => new ToolLedgerError('LEDGER_CLOSED', 'closed'),
    argument:
      'LEDGER_CLOSED: The server is shutting down and did not run {tool}. Nothing was done. Call it again in a moment with the same arguments and the same "{key}".',
    call: 'LEDGER_CLOSED: The server is shutting down and did not run {tool}. Nothing was done. Call it again in a moment with the same arguments.',
    read: 'LEDGER_CLOSED: The server is shutting down and did not run {tool}. Nothing was done. Call it again in a moment with the same arguments.',
  },
  {
    name: 'OUTCOME_UNKNOWN',
    error: () => new ToolLedgerError('OUTCOME_UNKNOWN', 'interrupted'),
    argument:
      'OUTCOME_UNKNOWN: An earlier attempt of this request to {tool} was interrupted while it acted, so it is not known whether it took effect. {tool} will not repeat it until an operator has checked. Do not call {tool} again for this request, with this or a new key; tell the user it needs checking.',
    call: 'OUTCOME_UNKNOWN: An earlier attempt of this request to {tool} was interrupted while it acted, so it is not known whether it took effect. {tool} will not repeat it until an operator has checked. Do not call {tool} again for this request, with this or a new key; tell the user it needs checking.',
    read: 'OUTCOME_UNKNOWN: An earlier attempt of this request to {tool} was interrupted while it acted, so it is not known whether it took effect. {tool} will not repeat it until an operator has checked. Do not call {tool} again for this request, with this or a new key; tell the user it needs checking.',
  },
  {
    name: 'ACCESS_DENIED',
    error: () => new ToolLedgerError('ACCESS_DENIED', 'This caller may not call it'),
    argument:
      'ACCESS_DENIED: This caller may not call it. Nothing was done. Do not retry {tool} for this caller, with this or a new key; tell the user they are not allowed to use it.',
    call: 'ACCESS_DENIED: This caller may not call it. Nothing was done. Do not retry {tool} for this caller, with this or a new key; tell the user they are not allowed to use it.',
    read: 'ACCESS_DENIED: This caller may not call it. Nothing was done. Do not retry {tool} for this caller, with this or a new key; tell the user they are not allowed to use it.',
  },
  {
    name: 'RATE_LIMITED',
    error: () => new ToolLedgerError('RATE_LIMITED', 'Too many calls', { retryAfterMs: 1500 }),
    argument:
      'RATE_LIMITED: Too many calls. Nothing was done. Wait about 2 s, then call {tool} again with the same arguments and the same "{key}".',
    call: 'RATE_LIMITED: Too many calls. Nothing was done. Wait about 2 s, then call {tool} again with the same arguments.',
    read: 'RATE_LIMITED: Too many calls. Nothing was done. Wait about 2 s, then call {tool} again with the same arguments.',
  },
  // The approval codes are decided by a person, not provoked by a test on demand: the handler's error stands in
  // (approval is for mutations only, so no read rows). The real flows are in test/adapters/*-approvals.test.ts.
  {
    name: 'APPROVAL_REQUIRED',
    error: () => new ToolLedgerError('APPROVAL_REQUIRED', 'awaits approval', { approval: APPROVAL_CALL }),
    argument:
      'APPROVAL_REQUIRED: {tool} was not run: a person must approve this request first, and it is now waiting for them under the key "refund-7". Nothing was done. Tell the user it awaits approval; once approved, call {tool} again with the same arguments and the same "{key}" to run it. Do not use a new "{key}": that would ask for a second approval.',
    call: 'APPROVAL_REQUIRED: {tool} was not run: a person must approve this request first, and it is now waiting for them under the key "refund-7". Nothing was done. Tell the user it awaits approval; it runs when this same tool call is made again after the approval.',
  },
  {
    name: 'APPROVAL_DECLINED (with a reason)',
    error: () =>
      new ToolLedgerError('APPROVAL_DECLINED', 'declined', {
        approval: { ...APPROVAL_CALL, decision: decided('declined', 'Over the refund limit') },
      }),
    argument:
      'APPROVAL_DECLINED: A person declined this request to {tool}, saying: Over the refund limit. Nothing was done, and this is final for this request. Do not retry it; tell the user it was declined and why.',
    call: 'APPROVAL_DECLINED: A person declined this request to {tool}, saying: Over the refund limit. Nothing was done, and this is final for this request. Do not retry it; tell the user it was declined and why.',
  },
  {
    name: 'APPROVAL_EXPIRED',
    error: () => new ToolLedgerError('APPROVAL_EXPIRED', 'expired', { approval: APPROVAL_CALL }),
    argument:
      'APPROVAL_EXPIRED: Nobody approved this request to {tool} in time, so it expired. Nothing was done, and this is final for this request. Tell the user; if they still want it, it needs a new request with a new "{key}".',
    call: 'APPROVAL_EXPIRED: Nobody approved this request to {tool} in time, so it expired. Nothing was done, and this is final for this request. Tell the user; if they still want it, it needs a new request.',
  },
  {
    name: 'APPROVAL_NOT_PENDING',
    error: () =>
      new ToolLedgerError('APPROVAL_NOT_PENDING', 'not pending', {
        approval: { ...APPROVAL_CALL, status: 'none' },
      }),
    argument: `APPROVAL_NOT_PENDING: There is no request of {tool} waiting for a decision under this key. Nothing was changed. ${SETUP}`,
    call: `APPROVAL_NOT_PENDING: There is no request of {tool} waiting for a decision under this key. Nothing was changed. ${SETUP}`,
  },
  {
    name: 'APPROVAL_ALREADY_DECIDED',
    error: () =>
      new ToolLedgerError('APPROVAL_ALREADY_DECIDED', 'decided', {
        approval: { ...APPROVAL_CALL, decision: decided('approved') },
      }),
    argument:
      'APPROVAL_ALREADY_DECIDED: This request to {tool} was already approved by ana@example.com, so this decision was not recorded. Nothing was changed. Do not decide it again; tell the user who decided it.',
    call: 'APPROVAL_ALREADY_DECIDED: This request to {tool} was already approved by ana@example.com, so this decision was not recorded. Nothing was changed. Do not decide it again; tell the user who decided it.',
  },
  {
    name: 'APPROVAL_ACTOR_REQUIRED',
    error: () => new ToolLedgerError('APPROVAL_ACTOR_REQUIRED', 'no actor', { approval: APPROVAL_CALL }),
    argument: `APPROVAL_ACTOR_REQUIRED: A decision on {tool} was refused because it did not say who took it. Nothing was changed. ${SETUP}`,
    call: `APPROVAL_ACTOR_REQUIRED: A decision on {tool} was refused because it did not say who took it. Nothing was changed. ${SETUP}`,
  },
];

/** The one sentence a replay starts with; a first execution reads as the bare JSON. */
const REPLAYED =
  /^Replayed: \{tool\} already did this request at \S+ and did not do it again; this is the original result\.\n?/;

// ---------------------------------------------------------------------------------------------------------------
// The adapters, each as the model meets it.
// ---------------------------------------------------------------------------------------------------------------

/** What one call shows the model, from one adapter. `id` names the intent (key or tool call id). */
type Driver = (id: string, args: Record<string, unknown>) => Promise<string>;

interface Adapter {
  readonly name: string;
  readonly voice: Voice;
  /** The key argument, for the "argument" voice. */
  readonly key?: string;
  readonly build: (tool: AdapterTool) => Promise<Driver>;
}

const textOf = (result: unknown) =>
  ((result as { content: Array<{ text?: string }> }).content ?? [])
    .map((block) => block.text ?? '')
    .join('\n');

async function mcpV1(tool: AdapterTool, keyed: boolean): Promise<Driver> {
  const server = new McpServerV1({ name: 'spec', version: '1' });
  registerMcpTool(server, tool);
  const [clientSide, serverSide] = InMemoryTransportV1.createLinkedPair();
  await server.connect(serverSide);
  const client = new ClientV1({ name: 'spec', version: '1' });
  await client.connect(clientSide);
  return async (id, args) =>
    textOf(
      await client.callTool({ name: tool.name, arguments: keyed ? { ...args, idempotency_key: id } : args }),
    );
}

async function mcpV2(tool: AdapterTool, keyed: boolean): Promise<Driver> {
  const server = new McpServerV2({ name: 'spec', version: '1' });
  registerMcpTool(server, tool);
  const [clientSide, serverSide] = InMemoryTransportV2.createLinkedPair();
  await server.connect(serverSide);
  const client = new ClientV2({ name: 'spec', version: '1' });
  await client.connect(clientSide);
  return async (id, args) =>
    textOf(
      await client.callTool({ name: tool.name, arguments: keyed ? { ...args, idempotency_key: id } : args }),
    );
}

function openAi(tool: AdapterTool, modelSendsKey: boolean): Driver {
  const functionTool = ledgerFunctionTool(tool);
  return async (id, args) => {
    const output = await functionTool.invoke(
      new RunContext({ conversationId: 'spec' }),
      JSON.stringify(modelSendsKey ? { ...args, idempotency_key: id } : args),
      { toolCall: { type: 'function_call', callId: id, name: tool.name, arguments: JSON.stringify(args) } },
    );
    return typeof output === 'string' ? output : JSON.stringify(output);
  };
}

function aiSdk(tool: AdapterTool): Driver {
  const aiTool = ledgerAiTool(tool, { conversationId: 'spec' });
  return async (id, args) => {
    try {
      const output = await aiTool.execute!(args, { toolCallId: id, messages: [] });
      const model = await aiTool.toModelOutput!({ toolCallId: id, input: args, output });
      return model.type === 'text' ? model.value : JSON.stringify(model);
    } catch (error) {
      // What the SDK sends the model as the tool error.
      return (error as Error).message;
    }
  };
}

function anthropic(tool: AdapterTool): Driver {
  const runnable = ledgerAnthropicTool(tool, { runId: 'spec' });
  return async (id, args) =>
    (await answerToolUse([runnable], { type: 'tool_use', id, name: tool.name, input: args } as never))
      .content;
}

function langChain(tool: AdapterTool): Driver {
  const structured = ledgerLangChainTool(tool);
  return async (id, args) => {
    const message = await structured.invoke(
      { id, name: tool.name, args, type: 'tool_call' },
      { configurable: { thread_id: 'spec' } },
    );
    return String((message as { content: unknown }).content);
  };
}

const MUTATION_ADAPTERS: readonly Adapter[] = [
  { name: 'MCP SDK 2.x', voice: 'argument', key: 'idempotency_key', build: (t) => mcpV2(t, true) },
  { name: 'MCP SDK 1.x', voice: 'argument', key: 'idempotency_key', build: (t) => mcpV1(t, true) },
  {
    name: 'OpenAI Agents, key sent by the model',
    voice: 'argument',
    key: 'idempotency_key',
    build: async (t) => openAi(t, true),
  },
  { name: 'OpenAI Agents, key from the call id', voice: 'call', build: async (t) => openAi(t, false) },
  { name: 'AI SDK', voice: 'call', build: async (t) => aiSdk(t) },
  { name: 'Anthropic', voice: 'call', build: async (t) => anthropic(t) },
  { name: 'LangChain', voice: 'call', build: async (t) => langChain(t) },
];

const READ_ADAPTERS: readonly Adapter[] = [
  { name: 'MCP SDK 2.x', voice: 'read', build: (t) => mcpV2(t, false) },
  { name: 'MCP SDK 1.x', voice: 'read', build: (t) => mcpV1(t, false) },
  { name: 'OpenAI Agents', voice: 'read', build: async (t) => openAi(t, false) },
  { name: 'AI SDK', voice: 'read', build: async (t) => aiSdk(t) },
  { name: 'Anthropic', voice: 'read', build: async (t) => anthropic(t) },
  { name: 'LangChain', voice: 'read', build: async (t) => langChain(t) },
];

// ---------------------------------------------------------------------------------------------------------------

let ledger: Ledger;
/** What the probe tools' handler throws on the next call; nothing means it succeeds. */
let next: (() => ToolLedgerError) | undefined;
let sequence = 0;
const handler = async () => {
  const make = next;
  next = undefined;
  if (make) throw make();
  return { ok: true };
};
const input = z.object({ to: z.string() });

beforeAll(async () => {
  ledger = await createLedger({ pglite: 'memory://', telemetry: false });
});

afterAll(async () => {
  await ledger?.close();
});

function fill(template: string, tool: string, key: string | undefined): string {
  return template.replaceAll('{tool}', tool).replaceAll('{key}', key ?? '');
}

// Words a model cannot act on: calls and options of this library.
const LIBRARY_API =
  /deriveKey|registerMcpTool|ledger\w*Tool|\{ ?key|Pass \{|conversationId|experimental_context/;

it('covers every error code', () => {
  const covered = new Set(ROWS.map((row) => row.error().code));
  expect([...covered].sort()).toEqual(Object.values(ErrorCode).sort());
});

describe.each([
  ...MUTATION_ADAPTERS.map((adapter) => ({ adapter, kind: 'mutation' as const })),
  ...READ_ADAPTERS.map((adapter) => ({ adapter, kind: 'read' as const })),
])('$adapter.name, $kind tool', ({ adapter, kind }) => {
  const tool = `probe_${kind}_${adapter.name.replace(/\W+/g, '_').toLowerCase()}`;
  let drive: Driver;

  beforeAll(async () => {
    drive = await adapter.build(ledger.tool({ name: tool, kind, input, handler }));
  });

  it('reads a first execution as the bare result, and a replay as one sentence before it', async () => {
    const id = `intent-${++sequence}`;
    expect(await drive(id, { to: 'a' })).toBe('{"ok":true}');
    const again = await drive(id, { to: 'a' });
    if (kind === 'read') {
      // Reads are never stored: a second call runs again and is no replay.
      expect(again).toBe('{"ok":true}');
    } else {
      expect(again).toMatch(new RegExp(REPLAYED.source.replace('\\{tool\\}', tool)));
      expect(again).toMatch(/\{"ok":true\}$/);
    }
  });

  const rows = ROWS.flatMap((row) => {
    const template = adapter.voice === 'read' ? row.read : row[adapter.voice];
    return template === undefined ? [] : [{ row, template }];
  });

  it.each(rows)('$row.name', async ({ row, template }) => {
    next = row.error;
    const text = await drive(`intent-${++sequence}`, { to: 'a' });
    expect(text).toBe(fill(template, tool, adapter.key));
    expect(text).toMatch(
      /Nothing was done|did nothing|not known (yet )?whether|may have happened|did not complete|Nothing was changed|was not run/,
    );
    expect(text).not.toMatch(LIBRARY_API);
  });
});
