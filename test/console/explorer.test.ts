import { createHmac } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../src/console/index.js';
import { createLedger, type Ledger, OutcomeUnknownError } from '../../src/index.js';
import { type ExplorerAccess, setUpExplorer } from '../ops/support/explorer.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';

// The console as the explorer's read-only role (postgres/explorer.sql, run as the stack runs it): it reads the one
// view that role may read, says on every page what that view leaves out, and refuses to start with writes. The
// Citus lane runs it on a distributed schema (TEST_DISTRIBUTION), where the view reads the shards.

const schema = uniqueSchema('console_explorer');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const SECRET = 'explorer-console-secret-0123456789';
const UNSAFE_KEY = 'refund-for-priya@example.com';
let ledger: Ledger;
let access: ExplorerAccess;
let app: RunningConsole;

async function get(path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(new URL(path, app.url));
  return { status: res.status, body: await res.text() };
}

async function post(path: string, form: Record<string, string>) {
  const csrf = /name="csrf" value="([^"]+)"/.exec((await get('/search')).body)?.[1] as string;
  const res = await fetch(new URL(path, app.url), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: app.url.origin },
    body: new URLSearchParams({ csrf, ...form }),
  });
  return { status: res.status, body: await res.text() };
}

const runLinks = (body: string) => [...body.matchAll(/href="\/runs\/(\d+)"/g)].map((m) => m[1] as string);

describe("the console as the explorer's read-only role", () => {
  beforeAll(async () => {
    ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      telemetry: false,
      ...TEST_DISTRIBUTION,
    });
    const invoice = ledger.tool({
      name: 'create_invoice',
      kind: 'mutation',
      handler: async (input, ctx) =>
        ctx.step('create', () => ({ invoiceId: `inv_${(input as { n: number }).n}` })),
    });
    const charge = ledger.tool({
      name: 'charge_card',
      kind: 'mutation',
      handler: async (_: unknown, ctx) =>
        ctx.step('charge', () => {
          throw new OutcomeUnknownError('the provider hung up on maria@example.com');
        }),
    });
    for (let n = 0; n < 20; n++)
      await invoice.call(
        { n },
        { key: `inv-${n}`, tenant: n % 2 ? 'globex' : 'acme', user: 'maria@example.com' },
      );
    await invoice.call({ n: 99 }, { key: UNSAFE_KEY, tenant: 'acme', user: 'u_1' });
    await expect(charge.call({}, { key: 'charge-1', tenant: 'acme' })).rejects.toMatchObject({
      code: 'OUTCOME_UNKNOWN',
    });
    if (TEST_DISTRIBUTION.distribute) {
      const { rows } = await pool.query(
        `SELECT citus_table_type FROM citus_tables WHERE table_name = $1::regclass`,
        [`"${schema}".tool_runs`],
      );
      expect(rows).toEqual([{ citus_table_type: 'distributed' }]);
    }
    access = await setUpExplorer(pool, databaseUrl(), schema, SECRET);
    // The role may not read the ledger's own table: what the console would have read.
    await expect(access.readerPool.query(`SELECT 1 FROM "${schema}".tool_runs LIMIT 1`)).rejects.toThrow(
      /permission denied/,
    );
    app = await startConsole({ connectionString: access.readerUrl, schema, port: 0 });
  });

  afterAll(async () => {
    await app?.close();
    await ledger?.close();
    await access?.drop();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('refuses to start with writes through that role', async () => {
    await expect(
      startConsole({
        connectionString: access.readerUrl,
        schema,
        port: 0,
        allowWrites: true,
        operator: 'ana',
      }),
    ).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining("explorer's view") });
  });

  it('gives the overview, and says on each page what the view leaves out', async () => {
    const overview = await get('/');
    expect(overview.status).toBe(200);
    expect(overview.body).toContain('Read through the explorer&#39;s view');
    expect(overview.body).toMatch(/create_invoice/);
    expect(overview.body).toMatch(/charge_card/);
    expect(overview.body).toMatch(/Runs created<strong>22<\/strong>|Runs created[\s\S]{0,40}22/);
  });

  it('searches by a safe key, by an unsafe one through its key_hash, and by tenant; not by user', async () => {
    const safe = await post('/search', { key: 'inv-3' });
    expect(safe.status).toBe(200);
    expect(runLinks(safe.body)).toHaveLength(1);
    expect(safe.body).toContain('globex');
    const unsafe = await post('/search', { key: UNSAFE_KEY });
    expect(runLinks(unsafe.body)).toHaveLength(1);
    const none = await post('/search', { key: 'no-such-key' });
    expect(runLinks(none.body)).toHaveLength(0);
    const now = Date.now();
    const byTenant = await post('/search', {
      tenant: 'acme',
      from: new Date(now - 3600_000).toISOString().slice(0, 16),
      to: new Date(now + 120_000).toISOString().slice(0, 16),
    });
    // 10 invoices, the unsafe key's and the charge, in acme.
    expect(runLinks(byTenant.body)).toHaveLength(12);
    expect(byTenant.body).not.toContain(UNSAFE_KEY);
    expect(byTenant.body).toContain(`hmac:${createHmac('sha256', SECRET).update(UNSAFE_KEY).digest('hex')}`);
    expect(byTenant.body).not.toContain('maria@example.com');
    const byUser = await post('/search', { user: 'u_1' });
    expect(byUser.status).toBe(400);
    expect(byUser.body).toContain('has no user ids');
  });

  it('shows a run without user, result or steps, and an inbox without messages; writes are refused', async () => {
    const [id] = runLinks((await post('/search', { key: UNSAFE_KEY })).body);
    const run = await get(`/runs/${id}`);
    expect(run.status).toBe(200);
    expect(run.body).toContain('create_invoice');
    expect(run.body).toContain('succeeded');
    expect(run.body).not.toContain('inv_99');
    expect(run.body).not.toContain(UNSAFE_KEY);
    const inbox = await get('/inbox/unknown');
    expect(inbox.body).toContain('charge_card');
    expect(inbox.body).toContain('not in the explorer');
    expect(inbox.body).not.toContain('maria@example.com');
    const [unknownId] = runLinks(inbox.body);
    const refused = await post(`/runs/${unknownId}/resolve`, { resolution: 'rerun', reason: 'x' });
    expect(refused.status).toBe(403);
    expect((await get('/inbox/approvals')).body).toContain('Approvals cannot be read here');
    const { rows } = await pool.query(
      `SELECT status FROM "${schema}".tool_runs WHERE idempotency_key = 'charge-1'`,
    );
    expect(rows).toEqual([{ status: 'unknown' }]);
  });
});
