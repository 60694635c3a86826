import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../src/console/index.js';
import { createLedger, type Ledger, OutcomeUnknownError } from '../../src/index.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';

// The console on the partitioned layout (tool_runs partitioned by expires_at), over HTTP: search by key and by
// tenant and time, the run page with its steps, the overview, and a resolve from the inbox, which moves the row's
// expiry and so may move it to another partition.

const schema = uniqueSchema('console_part');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const TOKEN = 'q'.repeat(40);
const auth = { authorization: `Bearer ${TOKEN}` };
let ledger: Ledger;
let app: RunningConsole;

async function get(path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(new URL(path, app.url), { headers: auth });
  return { status: res.status, body: await res.text() };
}

async function csrf(): Promise<string> {
  return /name="csrf" value="([^"]+)"/.exec((await get('/search')).body)?.[1] as string;
}

async function post(path: string, form: Record<string, string>) {
  const res = await fetch(new URL(path, app.url), {
    method: 'POST',
    redirect: 'manual',
    headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded', origin: app.url.origin },
    body: new URLSearchParams({ csrf: await csrf(), ...form }),
  });
  return { status: res.status, location: res.headers.get('location'), body: await res.text() };
}

const utcMinute = (d: Date) => d.toISOString().slice(0, 16);
const runLinks = (body: string) => [...body.matchAll(/href="\/runs\/(\d+)"/g)].map((m) => m[1] as string);

describe('the console on the partitioned layout', () => {
  beforeAll(async () => {
    ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      telemetry: false,
      layout: 'partitioned',
    });
    const invoice = ledger.tool({
      name: 'create_invoice',
      kind: 'mutation',
      handler: async (input, ctx) => {
        const { n } = input as { n: number };
        const made = await ctx.step('create', () => ({ invoiceId: `inv_${n}` }));
        await ctx.step('email', () => ({ sent: true }));
        return made;
      },
    });
    const charge = ledger.tool({
      name: 'charge_card',
      kind: 'mutation',
      handler: async (_: unknown, ctx) =>
        ctx.step('charge', () => {
          throw new OutcomeUnknownError('the provider hung up');
        }),
    });
    for (let n = 0; n < 60; n++)
      await invoice.call({ n }, { key: `inv-${n}`, tenant: n % 2 === 0 ? 'acme' : 'globex', user: 'u_1' });
    await expect(charge.call({}, { key: 'charge-9', tenant: 'acme' })).rejects.toMatchObject({
      code: 'OUTCOME_UNKNOWN',
    });
    const [kind] = (
      await pool.query(`SELECT relkind::text FROM pg_class WHERE oid = to_regclass('"${schema}".tool_runs')`)
    ).rows;
    expect(kind).toEqual({ relkind: 'p' });
    app = await startConsole({
      connectionString: databaseUrl(),
      schema,
      port: 0,
      allowWrites: true,
      auth: { tokens: [{ role: 'operator', actor: 'ana', token: TOKEN }] },
    });
  });

  afterAll(async () => {
    await app?.close();
    await ledger?.close();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('finds a key, and its run page shows the row and the steps', async () => {
    const found = await post('/search', { key: 'inv-41' });
    expect(found.status).toBe(200);
    const ids = runLinks(found.body);
    expect(ids).toHaveLength(1);
    expect(found.body).toContain('globex');
    const run = await get(`/runs/${ids[0]}`);
    expect(run.status).toBe(200);
    expect(run.body).toMatch(/create_invoice/);
    const steps = run.body.slice(run.body.indexOf('<table aria-label="Steps">'));
    expect(steps.slice(0, steps.indexOf('</table>'))).toMatch(
      /<td>create<\/td><td[^>]*>succeeded[\s\S]*inv_41[\s\S]*<td>email<\/td><td[^>]*>succeeded/,
    );
  });

  it('searches by tenant and time range, a page at a time, and gives the overview', async () => {
    const now = Date.now();
    const window = {
      tenant: 'acme',
      from: utcMinute(new Date(now - 3600_000)),
      to: utcMinute(new Date(now + 120_000)),
    };
    const first = await post('/search', window);
    expect(first.status).toBe(200);
    const ids = runLinks(first.body);
    // 30 invoices and the charge in acme: all on one page of 50, newest first.
    expect(ids).toHaveLength(31);
    expect(ids.map(Number)).toEqual([...ids.map(Number)].sort((a, b) => b - a));
    expect(first.body).not.toContain('globex');
    const overview = await get('/');
    expect(overview.status).toBe(200);
    expect(overview.body).toMatch(/create_invoice/);
    expect(overview.body).toMatch(/charge_card/);
  });

  it('resolves an unknown outcome from the inbox', async () => {
    const inbox = await get('/inbox/unknown');
    const [id] = runLinks(inbox.body);
    expect(inbox.body).toContain('charge_card');
    const done = await post(`/runs/${id}/resolve`, {
      resolution: 'failed',
      failed: 'not charged',
      reason: 'checked the provider',
      return: '/inbox/unknown',
    });
    expect(done).toMatchObject({ status: 303, location: '/inbox/unknown?done=resolved' });
    const { rows } = await pool.query(
      `SELECT status, final FROM "${schema}".tool_runs WHERE idempotency_key = 'charge-9'`,
    );
    expect(rows).toEqual([{ status: 'failed', final: true }]);
    const run = await get(`/runs/${id}`);
    expect(run.body).toMatch(/ana[\s\S]*checked the provider/);
  });
});
