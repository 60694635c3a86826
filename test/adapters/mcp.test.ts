import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport as InMemoryTransportV1 } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  InMemoryTransport as InMemoryTransportV2,
  McpServer as McpServerV2,
} from '@modelcontextprotocol/server';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLedger, type Ledger, ToolFailure, ToolLedgerError } from '../../src/index.js';
import { MCP_CALL_META_KEY, MCP_ERROR_META_KEY, registerMcpTool } from '../../src/integrations/mcp/index.js';

const AUTH = { token: 't', clientId: 'agent-7', scopes: [], extra: { tenantId: 'acme' } };

/** One SDK line: its server, and a real client of the same line connected to it in memory. */
const LINES = {
  '1.x': {
    server: () => new McpServerV1({ name: 'test', version: '1.0.0' }),
    async connect(server: McpServerV1 | McpServerV2) {
      const [clientTransport, serverTransport] = InMemoryTransportV1.createLinkedPair();
      // Stands in for an HTTP transport's auth middleware: every request carries the caller's token info.
      const send = clientTransport.send.bind(clientTransport);
      clientTransport.send = (message, options) => send(message, { ...options, authInfo: AUTH });
      await (server as McpServerV1).connect(serverTransport);
      const client = new ClientV1({ name: 'test-client', version: '1.0.0' });
      await client.connect(clientTransport);
      return client;
    },
  },
  '2.x': {
    server: () => new McpServerV2({ name: 'test', version: '1.0.0' }),
    async connect(server: McpServerV1 | McpServerV2) {
      const [clientTransport, serverTransport] = InMemoryTransportV2.createLinkedPair();
      const send = clientTransport.send.bind(clientTransport);
      clientTransport.send = (message, options) => send(message, { ...options, authInfo: AUTH });
      await (server as McpServerV2).connect(serverTransport);
      const client = new ClientV2({ name: 'test-client', version: '1.0.0' });
      await client.connect(clientTransport);
      return client;
    },
  },
} as const;

describe.each(Object.keys(LINES) as (keyof typeof LINES)[])(
  'registerMcpTool on MCP SDK %s over a real client (in-memory transport)',
  (line) => {
    let ledger: Ledger;
    let client: ClientV1 | ClientV2;
    let server: McpServerV1 | McpServerV2;
    const sent: Array<{ to: string; tenant: string; user: string | undefined }> = [];
    let invoices = 0;
    let slowRuns = 0;

    async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
      return (await client.callTool({ name, arguments: args })) as CallToolResult;
    }

    function code(result: CallToolResult): unknown {
      return (result._meta?.[MCP_ERROR_META_KEY] as { code?: string } | undefined)?.code;
    }

    beforeAll(async () => {
      sent.length = 0;
      invoices = 0;
      slowRuns = 0;
      ledger = await createLedger({ pglite: 'memory://', telemetry: false });
      server = LINES[line].server();

      const createInvoice = ledger.tool({
        name: 'create_invoice',
        kind: 'mutation',
        title: 'Create invoice',
        description: 'Creates an invoice for a customer',
        input: z.object({ customer: z.string().min(1), amountCents: z.number().int().positive() }),
        handler: async (input) => ({ invoiceId: `inv_${++invoices}`, ...input }),
      });
      const sendEmail = ledger.tool({
        name: 'send_email',
        kind: 'mutation',
        destructive: true,
        input: z.object({ to: z.string() }),
        handler: async (input, ctx) => {
          sent.push({ to: input.to, tenant: ctx.tenant, user: ctx.user });
          return { sent: true };
        },
      });
      const getInvoice = ledger.tool({
        name: 'get_invoice',
        kind: 'read',
        description: 'Reads an invoice.',
        input: z.object({ invoiceId: z.string() }),
        handler: async (input) => ({ invoiceId: input.invoiceId, status: 'open' }),
      });
      const slow = ledger.tool({
        name: 'slow_charge',
        kind: 'mutation',
        waitSeconds: 0,
        input: z.object({ n: z.number() }),
        handler: async () => {
          slowRuns++;
          await new Promise((resolve) => setTimeout(resolve, 400));
          return { charged: true };
        },
      });
      const decline = ledger.tool({
        name: 'charge_card',
        kind: 'mutation',
        input: z.object({ cents: z.number() }),
        handler: async () => {
          throw new ToolFailure('The card was declined.', { reason: 'card_declined' });
        },
      });
      const crash = ledger.tool({
        name: 'crash',
        kind: 'mutation',
        handler: async () => {
          throw new Error('socket hang up');
        },
      });
      const exportJob = ledger.tool({
        name: 'start_export',
        kind: 'job',
        input: z.object({ format: z.enum(['csv', 'json']) }),
        handler: async (input) => {
          await new Promise((resolve) => setTimeout(resolve, 50));
          return { url: `https://example.test/export.${input.format}` };
        },
      });
      const normalize = ledger.tool({
        name: 'rename_customer',
        kind: 'mutation',
        input: z.object({
          name: z.string().transform((value) => value.trim()),
          note: z.string().default('none'),
        }),
        handler: async (input) => input,
      });
      const valibotTool = ledger.tool({
        name: 'tag_customer',
        kind: 'mutation',
        input: v.object({ tag: v.string() }),
        handler: async (input) => ({ tagged: input.tag }),
      });

      registerMcpTool(server, createInvoice);
      registerMcpTool(server, sendEmail, {
        tenant: (extra) => extra.authInfo?.extra?.tenantId as string | undefined,
        user: (extra) => extra.authInfo?.clientId,
      });
      registerMcpTool(server, getInvoice);
      registerMcpTool(server, slow);
      registerMcpTool(server, decline);
      registerMcpTool(server, crash);
      registerMcpTool(server, exportJob);
      registerMcpTool(server, normalize);
      expect(() => registerMcpTool(server, valibotTool)).toThrowError(
        expect.objectContaining({
          code: 'CONFIG_INVALID',
          message: expect.stringContaining('inputJsonSchema'),
        }),
      );
      registerMcpTool(server, valibotTool, {
        inputJsonSchema: { type: 'object', properties: { tag: { type: 'string' } }, required: ['tag'] },
      });

      client = await LINES[line].connect(server);
    });

    afterAll(async () => {
      await client?.close();
      await ledger?.close();
    });

    it('publishes the key argument, the replay sentence and the annotations', async () => {
      const { tools } = await client.listTools();
      const byName = new Map(tools.map((t) => [t.name, t]));
      const invoice = byName.get('create_invoice')!;
      expect(invoice.title).toBe('Create invoice');
      expect(invoice.description).toMatch(/^Creates an invoice for a customer\. Replay-safe: /);
      expect(invoice.inputSchema.required).toEqual(['customer', 'amountCents', 'idempotency_key']);
      expect(invoice.inputSchema.properties).toMatchObject({
        customer: { type: 'string', minLength: 1 },
        amountCents: { type: 'integer' },
        idempotency_key: {
          type: 'string',
          description: expect.stringMatching(/Same key = same intent.*new key/s),
        },
      });
      expect(invoice.annotations).toMatchObject({
        readOnlyHint: false,
        idempotentHint: true,
        destructiveHint: false,
      });
      expect(byName.get('send_email')!.annotations).toMatchObject({
        destructiveHint: true,
        idempotentHint: true,
      });

      const read = byName.get('get_invoice')!;
      expect(read.annotations).toMatchObject({ readOnlyHint: true });
      expect(read.annotations?.idempotentHint).toBeUndefined();
      expect(read.inputSchema.properties).not.toHaveProperty('idempotency_key');
      expect(read.inputSchema.required).toEqual(['invoiceId']);
      expect(read.description).toBe('Reads an invoice.');

      expect(byName.get('start_export')!.description).toContain('start_export_status');
      expect(byName.get('start_export_status')!.annotations).toMatchObject({ readOnlyHint: true });
      expect(byName.get('tag_customer')!.inputSchema.required).toEqual(['tag', 'idempotency_key']);
    });

    it('executes once and replays the original result with _meta saying so', async () => {
      const args = { customer: 'c_1', amountCents: 1200, idempotency_key: 'inv-key-1' };
      const first = await call('create_invoice', args);
      expect(first.isError).toBeFalsy();
      expect(first.structuredContent).toEqual({ invoiceId: 'inv_1', customer: 'c_1', amountCents: 1200 });
      const firstMeta = first._meta?.[MCP_CALL_META_KEY] as Record<string, unknown>;
      expect(firstMeta).toMatchObject({ outcome: 'executed', replayed: false, attempt: 1 });

      const again = await call('create_invoice', {
        idempotency_key: 'inv-key-1',
        amountCents: 1200,
        customer: 'c_1',
      });
      expect(again.content).toEqual([
        {
          type: 'text',
          text: `Replayed: create_invoice already did this request at ${firstMeta.completedAt} and did not do it again; this is the original result.`,
        },
        ...first.content,
      ]);
      expect(again.structuredContent).toEqual(first.structuredContent);
      const againMeta = again._meta?.[MCP_CALL_META_KEY] as Record<string, unknown>;
      expect(againMeta).toMatchObject({
        outcome: 'replayed',
        replayed: true,
        completedAt: firstMeta.completedAt,
      });
      expect(invoices).toBe(1);
    });

    it('answers a reused key with different arguments with KEY_REUSED, as a tool error', async () => {
      await call('create_invoice', { customer: 'c_2', amountCents: 1, idempotency_key: 'inv-key-2' });
      const result = await call('create_invoice', {
        customer: 'c_2',
        amountCents: 2,
        idempotency_key: 'inv-key-2',
      });
      expect(result.isError).toBe(true);
      expect(code(result)).toBe('KEY_REUSED');
      expect(result.structuredContent).toMatchObject({
        error: { code: 'KEY_REUSED', conflictReason: 'params_mismatch' },
      });
      expect((result.content[0] as { text: string }).text).toMatch(
        /already used for a request with different arguments\. Nothing was done\. If this is a new or changed request, call create_invoice again with a new "idempotency_key"/,
      );
    });

    it.each([
      [
        'a missing key',
        { customer: 'c', amountCents: 1 },
        'KEY_REQUIRED',
        /needs the "idempotency_key" argument/,
      ],
      [
        'a key that is not a string',
        { customer: 'c', amountCents: 1, idempotency_key: 7 },
        'KEY_INVALID',
        /string/,
      ],
      [
        'invalid arguments',
        { customer: '', amountCents: -1, idempotency_key: 'k-bad' },
        'INPUT_INVALID',
        /customer: /,
      ],
    ])('answers %s with %s', async (_case, args, expected, text) => {
      const result = await call('create_invoice', args);
      expect(result.isError).toBe(true);
      expect(code(result)).toBe(expected);
      expect((result.structuredContent as { error: { code: string } }).error.code).toBe(expected);
      expect((result.content[0] as { text: string }).text).toMatch(text);
    });

    it('tells a parallel duplicate to retry with the same key (IN_PROGRESS)', async () => {
      const args = { n: 1, idempotency_key: 'slow-1' };
      const [a, b] = await Promise.all([call('slow_charge', args), call('slow_charge', args)]);
      const busy = [a, b].find((r) => r.isError)!;
      expect(code(busy)).toBe('IN_PROGRESS');
      expect(busy._meta?.[MCP_ERROR_META_KEY]).toMatchObject({
        retryable: true,
        retryAfterMs: expect.any(Number),
      });
      expect((busy.content[0] as { text: string }).text).toMatch(
        /the same "idempotency_key" to get its result/,
      );
      expect(slowRuns).toBe(1);
    });

    it('reports a final business failure with its reason, and replays it', async () => {
      const first = await call('charge_card', { cents: 5, idempotency_key: 'charge-1' });
      const again = await call('charge_card', { cents: 5, idempotency_key: 'charge-1' });
      for (const result of [first, again]) {
        expect(result.isError).toBe(true);
        expect(code(result)).toBe('TOOL_FAILED');
        expect((result.content[0] as { text: string }).text).toMatch(
          /card_declined.*this is final: calling again with the same "idempotency_key" returns this same failure/s,
        );
      }
      expect(again.structuredContent).toMatchObject({ error: { replayed: true, reason: 'card_declined' } });
    });

    it('leaves other handler errors to the SDK (no ledger code)', async () => {
      const result = await call('crash', { idempotency_key: 'crash-1' });
      expect(result.isError).toBe(true);
      expect(code(result)).toBeUndefined();
      expect((result.content[0] as { text: string }).text).toContain('socket hang up');
    });

    it('resolves tenant and user from the request auth info', async () => {
      const result = await call('send_email', { to: 'a@example.test', idempotency_key: 'mail-1' });
      expect(result.isError).toBeFalsy();
      expect(sent).toEqual([{ to: 'a@example.test', tenant: 'acme', user: 'agent-7' }]);
    });

    it('runs read tools without a key', async () => {
      const result = await call('get_invoice', { invoiceId: 'inv_1' });
      expect(result.structuredContent).toEqual({ invoiceId: 'inv_1', status: 'open' });
      expect(result._meta?.[MCP_CALL_META_KEY]).toMatchObject({ outcome: 'executed', replayed: false });
      const bad = await call('get_invoice', {});
      expect(code(bad)).toBe('INPUT_INVALID');
    });

    it('returns a job id and reports the job through its status tool', async () => {
      const started = await call('start_export', { format: 'csv', idempotency_key: 'export-1' });
      const job = started.structuredContent as { job_id: string; status: string };
      expect(job).toMatchObject({ job_id: expect.stringMatching(/^job_/), status: 'running' });
      expect((started.content[0] as { text: string }).text).toContain('start_export_status');

      let status: CallToolResult;
      for (let i = 0; ; i++) {
        status = await call('start_export_status', { job_id: job.job_id });
        if ((status.structuredContent as { status: string }).status !== 'running' || i > 100) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(status.structuredContent).toMatchObject({
        job_id: job.job_id,
        status: 'succeeded',
        result: { url: 'https://example.test/export.csv' },
      });
      const replay = await call('start_export', { format: 'csv', idempotency_key: 'export-1' });
      expect(replay.structuredContent).toMatchObject({ job_id: job.job_id, status: 'succeeded' });
      expect((replay.content[0] as { text: string }).text).toMatch(
        /^Replayed: start_export already started this job/,
      );
      expect(replay._meta?.[MCP_CALL_META_KEY]).toMatchObject({ replayed: true, jobId: job.job_id });

      const missing = await call('start_export_status', { job_id: 'job_nope' });
      expect(missing.isError).toBe(true);
      expect(code(missing)).toBe('JOB_NOT_FOUND');
    });

    it('hands the raw arguments to the ledger tool, so transforms and defaults apply once', async () => {
      const { tools } = await client.listTools();
      const schema = tools.find((t) => t.name === 'rename_customer')!.inputSchema;
      expect(schema.required).toEqual(['name', 'idempotency_key']);
      const result = await call('rename_customer', { name: '  Ada  ', idempotency_key: 'rename-1' });
      expect(result.structuredContent).toEqual({ name: 'Ada', note: 'none' });
      const again = await call('rename_customer', { name: '  Ada  ', idempotency_key: 'rename-1' });
      expect(again._meta?.[MCP_CALL_META_KEY]).toMatchObject({ replayed: true });
    });

    it('validates non-zod inputs with their own validator', async () => {
      const ok = await call('tag_customer', { tag: 'vip', idempotency_key: 'tag-1' });
      expect(ok.structuredContent).toEqual({ tagged: 'vip' });
      const bad = await call('tag_customer', { tag: 3, idempotency_key: 'tag-2' });
      expect(code(bad)).toBe('INPUT_INVALID');
    });

    it('leaves an unknown tool to the SDK, which answers it as the line does', async () => {
      const outcome = await client.callTool({ name: 'no_such_tool', arguments: {} }).then(
        (result) => ({ isError: (result as CallToolResult).isError }),
        (error: Error) => ({ thrown: error.message }),
      );
      // 1.x turns it into an isError result; 2.x keeps it a JSON-RPC error (what docs/integrations.md says).
      expect(outcome).toEqual(
        line === '1.x' ? { isError: true } : { thrown: expect.stringContaining('no_such_tool not found') },
      );
    });

    it('refuses a tool whose input already has the key argument', () => {
      const clash = ledger.tool({
        name: 'clash',
        kind: 'mutation',
        input: z.object({ idempotency_key: z.string() }),
        handler: () => null,
      });
      expect(() => registerMcpTool(LINES[line].server(), clash)).toThrow(ToolLedgerError);
      expect(() => registerMcpTool(LINES[line].server(), clash, { keyField: 'request_key' })).not.toThrow();
    });
  },
);
