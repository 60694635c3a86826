import { type CallToolResult, Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_CALL_META_KEY, MCP_ERROR_META_KEY } from '../../src/integrations/mcp/index.js';
import { ROOT } from './support/built.js';

// The example server as a desktop MCP client runs it: a child process speaking MCP over stdio.
let client: Client;
let transport: StdioClientTransport;
let stderr = '';

async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

beforeAll(async () => {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith('OTEL_') && k !== 'DATABASE_URL') env[k] = v;
  }
  transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      '--import',
      'tsx',
      '--import',
      './examples/mcp-server/tracing.ts',
      'examples/mcp-server/server.ts',
    ],
    cwd: ROOT,
    env: { ...env, LEDGER_PGLITE: 'memory://', EXPORT_DELAY_MS: '100' },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  client = new Client({ name: 'example-test', version: '1.0.0' });
  // The server compiles its TypeScript with tsx and starts an in-memory PGlite before it answers `initialize`: on
  // a loaded CI machine that has taken over the SDK's 60 s default. The server's stderr says why it failed to.
  await client.connect(transport, { timeout: 110_000 }).catch((error: unknown) => {
    throw new Error(`the example server did not answer initialize; its stderr:\n${stderr}`, { cause: error });
  });
}, 120_000);

afterAll(async () => {
  await client?.close();
});

describe('examples/mcp-server over stdio', () => {
  it('lists the four ledger tools, the job status tool and the plain tool', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'create_invoice',
      'get_invoice',
      'send_email',
      'server_info',
      'start_export',
      'start_export_status',
    ]);
    const invoice = tools.find((t) => t.name === 'create_invoice')!;
    expect(invoice.inputSchema.required).toContain('idempotency_key');
    expect(invoice.annotations).toMatchObject({ idempotentHint: true, readOnlyHint: false });
    expect(tools.find((t) => t.name === 'get_invoice')!.annotations).toMatchObject({ readOnlyHint: true });
  });

  it('creates an invoice once, however often the call is retried', async () => {
    const args = { customer: 'cus_1', amountCents: 4200, idempotency_key: 'ex-inv-1' };
    const first = await call('create_invoice', args);
    const retry = await call('create_invoice', args);
    expect(first.structuredContent).toMatchObject({ invoiceId: 'inv_0001' });
    expect(retry.structuredContent).toEqual(first.structuredContent);
    expect(retry._meta?.[MCP_CALL_META_KEY]).toMatchObject({ replayed: true });
    const next = await call('create_invoice', { ...args, idempotency_key: 'ex-inv-2' });
    expect(next.structuredContent).toMatchObject({ invoiceId: 'inv_0002' });
    const read = await call('get_invoice', { invoiceId: 'inv_0001' });
    expect(read.structuredContent).toMatchObject({ id: 'inv_0001', amount_cents: 4200 });
  });

  it('answers a reused key with changed arguments, and a final failure, as tool errors with codes', async () => {
    const email = {
      to: 'ann@example.com',
      subject: 'Invoice',
      body: 'Attached.',
      idempotency_key: 'ex-mail-1',
    };
    expect((await call('send_email', email)).isError).toBeFalsy();
    const changed = await call('send_email', { ...email, body: 'Changed.' });
    expect(changed._meta?.[MCP_ERROR_META_KEY]).toMatchObject({ code: 'KEY_REUSED' });
    const blocked = await call('send_email', {
      ...email,
      to: 'x@blocked.example',
      idempotency_key: 'ex-mail-2',
    });
    expect(blocked._meta?.[MCP_ERROR_META_KEY]).toMatchObject({ code: 'TOOL_FAILED' });
  });

  it('runs an export job and reports it through start_export_status', async () => {
    const started = await call('start_export', { format: 'csv', idempotency_key: 'ex-export-1' });
    const { job_id: jobId } = started.structuredContent as { job_id: string };
    let status: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) {
      status = (await call('start_export_status', { job_id: jobId })).structuredContent as Record<
        string,
        unknown
      >;
      if (status.status !== 'running') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toMatchObject({ status: 'succeeded', result: { format: 'csv', invoices: 2 } });
  });

  it('is traced: the summary on shutdown lists a span per call (execute_tool for ledger tools, tools/call for the rest)', async () => {
    await call('server_info', {});
    await client.close();
    for (let i = 0; i < 300 && !stderr.includes('spans'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(stderr).toContain('tool-ledger example MCP server ready on stdio');
    expect(stderr).toMatch(/execute_tool create_invoice\s+executed/);
    expect(stderr).toMatch(/execute_tool create_invoice\s+replayed/);
    expect(stderr).toMatch(/execute_tool send_email\s+conflict/);
    // Instrumented by ToolLedgerMcpInstrumentation: MCP server spans.
    expect(stderr).toMatch(/tools\/call server_info\s+executed/);
    expect(stderr).toMatch(/tools\/call start_export_status\s+executed/);
  });
});
