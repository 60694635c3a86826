// A stdio MCP server whose mutating tools are replay-safe: an MCP client (or the model behind it) that retries
// a call with the same idempotency_key gets the original result back instead of a second invoice or email.
//
//   node --import tsx --import ./examples/mcp-server/tracing.ts examples/mcp-server/server.ts
//
// The ledger is an embedded PGlite database in examples/mcp-server/.data (LEDGER_PGLITE=memory:// for a
// throwaway one); with DATABASE_URL set it uses that Postgres instead.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
// MCP TypeScript SDK 2.x; with 1.x: '@modelcontextprotocol/sdk/server/mcp.js' and '.../server/stdio.js'.
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import pg from 'pg';
import { z } from 'zod';
// In your project: import { createLedger, type Queryable, ToolFailure } from 'tool-ledger';
import { createLedger, type Queryable, ToolFailure } from '../../src/index.js';
// In your project: import { registerMcpTool } from 'tool-ledger/mcp';
import { registerMcpTool } from '../../src/integrations/mcp/index.js';
import type { Telemetry } from '../../src/otel/index.js';

const TELEMETRY = Symbol.for('tool-ledger.example.telemetry');

const here = dirname(fileURLToPath(import.meta.url));
const exportDelayMs = Number(process.env.EXPORT_DELAY_MS ?? 1500);

// One database for the ledger and the example's own tables, so create_invoice can write both in one transaction.
let db: Queryable & { end?: () => Promise<void>; close?: () => Promise<void> };
if (process.env.DATABASE_URL) {
  db = new pg.Pool({ connectionString: process.env.DATABASE_URL });
} else {
  db = await PGlite.create(process.env.LEDGER_PGLITE ?? join(here, '.data'));
}
await db.query(`CREATE TABLE IF NOT EXISTS example_invoices (
  id text PRIMARY KEY, customer text NOT NULL, amount_cents integer NOT NULL, status text NOT NULL DEFAULT 'open')`);
await db.query(`CREATE TABLE IF NOT EXISTS example_outbox (
  id serial PRIMARY KEY, recipient text NOT NULL, subject text NOT NULL, body text NOT NULL)`);

const ledger = await createLedger(
  process.env.DATABASE_URL ? { pool: db as unknown as pg.Pool } : { pglite: db as PGlite },
);

const createInvoice = ledger.tool({
  name: 'create_invoice',
  kind: 'mutation',
  title: 'Create invoice',
  description: 'Creates an invoice for a customer and returns its id.',
  transactional: true,
  input: z.object({
    customer: z.string().min(1).describe('Customer id, for example cus_123'),
    amountCents: z.number().int().positive().describe('Amount in cents'),
  }),
  handler: async ({ customer, amountCents }, ctx) => {
    const { rows } = await ctx.db!.query<{ n: number }>('SELECT count(*)::int AS n FROM example_invoices');
    const id = `inv_${String((rows[0]?.n ?? 0) + 1).padStart(4, '0')}`;
    // Written in the ledger's transaction: the invoice exists exactly when its ledger row says it does.
    await ctx.db!.query('INSERT INTO example_invoices (id, customer, amount_cents) VALUES ($1, $2, $3)', [
      id,
      customer,
      amountCents,
    ]);
    return { invoiceId: id, customer, amountCents, status: 'open' };
  },
});

const sendEmail = ledger.tool({
  name: 'send_email',
  kind: 'mutation',
  title: 'Send email',
  description: 'Sends an email to a customer.',
  transactional: true,
  input: z.object({
    to: z.string().email(),
    subject: z.string().min(1),
    body: z.string(),
  }),
  handler: async ({ to, subject, body }, ctx) => {
    if (to.endsWith('@blocked.example')) {
      throw new ToolFailure(`The address ${to} is on the suppression list.`, { reason: 'suppressed' });
    }
    const { rows } = await ctx.db!.query<{ id: number }>(
      'INSERT INTO example_outbox (recipient, subject, body) VALUES ($1, $2, $3) RETURNING id',
      [to, subject, body],
    );
    return { messageId: `msg_${rows[0]!.id}`, to };
  },
});

const startExport = ledger.tool({
  name: 'start_export',
  kind: 'job',
  title: 'Export invoices',
  description: 'Exports all invoices as CSV or JSON in the background.',
  input: z.object({ format: z.enum(['csv', 'json']) }),
  handler: async ({ format }, ctx) => {
    await new Promise((resolve) => setTimeout(resolve, exportDelayMs));
    const { rows } = await db.query<{ id: string }>('SELECT id FROM example_invoices ORDER BY id');
    return { format, invoices: rows.length, file: `exports/${ctx.jobId}.${format}` };
  },
});

const getInvoice = ledger.tool({
  name: 'get_invoice',
  kind: 'read',
  title: 'Get invoice',
  description: 'Reads an invoice by id.',
  input: z.object({ invoiceId: z.string() }),
  handler: async ({ invoiceId }) => {
    const { rows } = await db.query(
      'SELECT id, customer, amount_cents, status FROM example_invoices WHERE id = $1',
      [invoiceId],
    );
    if (rows.length === 0) throw new ToolFailure(`No invoice ${invoiceId}.`, { reason: 'not_found' });
    return rows[0];
  },
});

const server = new McpServer({ name: 'tool-ledger-example', version: '1.0.0' });
registerMcpTool(server, createInvoice);
registerMcpTool(server, sendEmail, { openWorld: true });
registerMcpTool(server, startExport);
registerMcpTool(server, getInvoice);
// A plain tool, as in any MCP server: the instrumentation alone gives it a span, a log record and metrics.
server.registerTool(
  'server_info',
  { description: 'Tells which ledger backs this server.', annotations: { readOnlyHint: true } },
  async () => ({
    content: [
      { type: 'text', text: process.env.DATABASE_URL ? 'ledger: Postgres' : 'ledger: embedded PGlite' },
    ],
  }),
);

const transport = new StdioServerTransport();
let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await ledger.close();
  await (db.end?.() ?? db.close?.());
  // Set by tracing.ts when the server was started with `--import ./tracing.ts`.
  const telemetry = (globalThis as { [TELEMETRY]?: Telemetry })[TELEMETRY];
  if (telemetry) {
    await telemetry.shutdown();
    process.stderr.write(`${telemetry.summary()}\n`);
  }
  process.exit(0);
}
// The client closing stdin ends the session (that is how MCP clients stop stdio servers).
process.stdin.on('end', () => void stop());
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
await server.connect(transport);
process.stderr.write('tool-ledger example MCP server ready on stdio\n');
