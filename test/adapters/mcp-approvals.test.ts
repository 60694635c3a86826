import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  type CallToolResult,
  ElicitRequestSchema,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLedger, type Ledger } from '../../src/index.js';
import { MCP_ERROR_META_KEY, registerMcpTool } from '../../src/integrations/mcp/index.js';

// A tool with `approval` on an MCP server (SDK 1.x) and a real MCP client that answers the elicitation form
// the way a person would: approve, decline, dismiss; and a client that declared no elicitation at all.

type Answer = (request: { message: string; requestedSchema: unknown; mode?: string }) => ElicitResult;

let ledger: Ledger;
const refunds: Array<{ order: string; email: string; cents: number }> = [];
const decisions: Array<Record<string, unknown>> = [];
const asked: Array<{ message: string; requestedSchema: unknown; mode?: string }> = [];
let reply: Answer = () => ({ action: 'cancel' });

async function connect(elicitation: boolean, db: Ledger): Promise<Client> {
  const server = new McpServer({ name: 'refunds', version: '1.0.0' });
  const refund = db.tool({
    name: 'refund',
    kind: 'mutation',
    input: z.object({ order: z.string(), email: z.string(), cents: z.number().int() }),
    approval: 'required',
    handler: async (input) => {
      refunds.push(input);
      return { refunded: input.cents };
    },
  });
  registerMcpTool(server, refund, {
    user: (request) => (request.authInfo?.clientId as string | undefined) ?? undefined,
    approvals: {
      // The ledger itself, watched: what the adapter records, and for whom.
      ledger: {
        approve: (request) => {
          decisions.push({ action: 'approve', ...request });
          return db.approve(request);
        },
        decline: (request) => {
          decisions.push({ action: 'decline', ...request });
          return db.decline(request);
        },
      },
    },
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client(
    { name: 'desk-app', version: '1.0.0' },
    { capabilities: elicitation ? { elicitation: { form: {} } } : {} },
  );
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const params = request.params as { message: string; requestedSchema: unknown; mode?: string };
      asked.push(params);
      return reply(params);
    });
  }
  await client.connect(clientSide);
  return client;
}

let other: Ledger;
let withForms: Client;
let withoutForms: Client;

beforeAll(async () => {
  ledger = await createLedger({ pglite: 'memory://', telemetry: false });
  // A ledger has one tool of a name: the second server gets its own ledger.
  other = await createLedger({ pglite: 'memory://', telemetry: false });
  withForms = await connect(true, ledger);
  withoutForms = await connect(false, other);
});

afterAll(async () => {
  await withForms?.close();
  await withoutForms?.close();
  await ledger?.close();
  await other?.close();
});

beforeEach(() => {
  refunds.length = 0;
  decisions.length = 0;
  asked.length = 0;
});

const args = (key: string, cents = 50_000) => ({
  order: 'A-1',
  email: 'ann.smith@example.com',
  cents,
  idempotency_key: key,
});

async function call(client: Client, input: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name: 'refund', arguments: input })) as CallToolResult;
}

const code = (result: CallToolResult) =>
  (result._meta?.[MCP_ERROR_META_KEY] as { code?: string } | undefined)?.code;
const text = (result: CallToolResult) =>
  result.content.map((block) => (block as { text?: string }).text).join('\n');

describe('MCP approvals through elicitation (SDK 1.x server, SDK 1.x client)', () => {
  it('asks in a form with the arguments scrubbed; an approval runs the call once', async () => {
    reply = () => ({ action: 'accept', content: { decision: 'approve', reason: 'verified by phone' } });
    const result = await call(withForms, args('refund-1'));
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ refunded: 50_000 });
    expect(result._meta?.['tool-ledger/call']).toMatchObject({ outcome: 'approved', replayed: false });
    expect(refunds).toEqual([{ order: 'A-1', email: 'ann.smith@example.com', cents: 50_000 }]);

    expect(asked).toHaveLength(1);
    expect(asked[0]!.mode).toBe('form');
    expect(asked[0]!.message).toContain('refund');
    expect(asked[0]!.message).toContain('50000');
    expect(asked[0]!.message).not.toContain('ann.smith@example.com');
    expect(asked[0]!.requestedSchema).toMatchObject({
      properties: { decision: { enum: ['approve', 'decline'] } },
      required: ['decision'],
    });
    // Without a user, the decision is recorded for the client as it named itself.
    expect(decisions).toEqual([
      expect.objectContaining({
        action: 'approve',
        tool: 'refund',
        by: 'MCP client desk-app',
        reason: 'verified by phone',
      }),
    ]);

    // The same request again: the ledger replays it, nobody is asked twice.
    const again = await call(withForms, args('refund-1'));
    expect(again.structuredContent).toEqual({ refunded: 50_000 });
    expect(asked).toHaveLength(1);
    expect(refunds).toHaveLength(1);
  });

  it('a decline is final: the call never runs, and a retry is declined without asking', async () => {
    reply = () => ({ action: 'accept', content: { decision: 'decline', reason: 'suspected fraud' } });
    const result = await call(withForms, args('refund-2'));
    expect(result.isError).toBe(true);
    expect(code(result)).toBe('APPROVAL_DECLINED');
    const retry = await call(withForms, args('refund-2'));
    expect(code(retry)).toBe('APPROVAL_DECLINED');
    expect(asked).toHaveLength(1);
    expect(decisions).toEqual([expect.objectContaining({ action: 'decline', reason: 'suspected fraud' })]);
    expect(refunds).toEqual([]);
  });

  it('a dismissed form records nothing: the call awaits a decision made elsewhere, under its key', async () => {
    reply = () => ({ action: 'cancel' });
    const result = await call(withForms, args('refund-3'));
    expect(code(result)).toBe('APPROVAL_REQUIRED');
    expect(text(result)).toContain('under the key "refund-3"');
    expect(decisions).toEqual([]);

    // Approved by an operator (as `tool-ledger approve` does), the next call with the same key runs.
    await ledger.approve({ tenant: 'default', tool: 'refund', key: 'refund-3', by: 'ops' });
    reply = () => {
      throw new Error('nobody should be asked: the call is approved');
    };
    const after = await call(withForms, args('refund-3'));
    expect(after.structuredContent).toEqual({ refunded: 50_000 });
    // Approval never moves to other arguments.
    expect(code(await call(withForms, args('refund-3', 99_999)))).toBe('KEY_REUSED');
    expect(refunds).toHaveLength(1);
  });

  it('a client without elicitation gets a tool error saying the call awaits approval, and under which key', async () => {
    const result = await call(withoutForms, args('refund-4'));
    expect(result.isError).toBe(true);
    expect(code(result)).toBe('APPROVAL_REQUIRED');
    expect(text(result)).toMatch(
      /a person must approve this request first, and it is now waiting for them under the key "refund-4"/,
    );
    expect(asked).toEqual([]);
    expect(refunds).toEqual([]);
  });
});

describe('MCP approvals of a job', () => {
  it('starts the job only once the form approves it; its status tool then reports it', async () => {
    const jobs = await createLedger({ pglite: 'memory://', telemetry: false });
    const exported: string[] = [];
    const server = new McpServer({ name: 'exports', version: '1.0.0' });
    const exportJob = jobs.tool({
      name: 'export_customers',
      kind: 'job',
      input: z.object({ format: z.enum(['csv', 'json']) }),
      approval: 'required',
      handler: async (input) => {
        exported.push(input.format);
        await new Promise((resolve) => setTimeout(resolve, 50));
        return { url: `https://example.test/export.${input.format}` };
      },
    });
    registerMcpTool(server, exportJob, { approvals: { ledger: jobs } });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client(
      { name: 'desk-app', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } } },
    );
    const forms: string[] = [];
    let answer: ElicitResult = { action: 'cancel' };
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      forms.push((request.params as { message: string }).message);
      return answer;
    });
    await client.connect(clientSide);
    try {
      const callJob = async (key: string) =>
        (await client.callTool({
          name: 'export_customers',
          arguments: { format: 'csv', idempotency_key: key },
        })) as CallToolResult;
      // Dismissed: nothing starts, the job awaits a decision.
      const waiting = await callJob('export-1');
      expect(code(waiting)).toBe('APPROVAL_REQUIRED');
      expect(exported).toEqual([]);
      // Approved in the form: the job starts, and the call answers its running status.
      answer = { action: 'accept', content: { decision: 'approve', reason: 'quarterly export' } };
      const started = await callJob('export-1');
      expect(started.isError).toBeFalsy();
      const job = started.structuredContent as { job_id: string; status: string };
      expect(job).toMatchObject({ job_id: expect.stringMatching(/^job_/), status: 'running' });
      expect(started._meta?.['tool-ledger/call']).toMatchObject({ outcome: 'approved' });
      // The job runs in the background: its status tool reports it succeeded (bounded for a loaded machine).
      await expect
        .poll(
          async () =>
            (
              (await client.callTool({
                name: 'export_customers_status',
                arguments: { job_id: job.job_id },
              })) as CallToolResult
            ).structuredContent,
          { timeout: 10_000, interval: 50 },
        )
        .toMatchObject({ job_id: job.job_id, status: 'succeeded' });
      expect(exported).toEqual(['csv']);
      expect(forms).toHaveLength(2);
    } finally {
      await client.close();
      await jobs.close();
    }
  });
});
