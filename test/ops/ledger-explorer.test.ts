import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger, ToolFailure } from '../../src/index.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';
import { dashboardTargets, loadDashboard } from './support/configs.js';

/**
 * Every SQL query of dashboards/ledger-explorer.json, with its Grafana variables filled in the way Grafana's
 * PostgreSQL data source fills them, runs against real Postgres holding rows written by the real library.
 */

const FILE = 'ledger-explorer.json';
const targets = dashboardTargets(FILE);
const sqlTargets = targets.filter((t) => t.datasourceType === 'grafana-postgresql-datasource');

function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

interface Vars {
  schema: string;
  tenant?: string;
  tool?: string;
  key?: string;
}

/** Grafana's interpolation for the variables and macros these queries use; anything else is an error. */
function fill(sql: string, vars: Vars, from: Date, to: Date): string {
  const values: Record<string, string> = {
    schema: vars.schema,
    tenant: vars.tenant ?? '',
    tool: vars.tool ?? '',
    key: vars.key ?? '',
  };
  const filled = sql
    .replace(/\$__timeFilter\(([^)]+)\)/g, (_m, column: string) => {
      return `${column.trim()} BETWEEN '${from.toISOString()}' AND '${to.toISOString()}'`;
    })
    .replace(/\$\{([A-Za-z_]+)(?::([a-z]+))?\}|\$([A-Za-z_]+)/g, (match, braced, format, bare) => {
      const name = (braced ?? bare) as string;
      const value = values[name];
      if (value === undefined) throw new Error(`unknown variable ${match} in ${sql}`);
      if (format === undefined) return value;
      if (format === 'sqlstring') return sqlString(value);
      throw new Error(`unsupported variable format ${match}`);
    });
  return filled;
}

const harness = new TelemetryHarness().registerGlobal();
const schema = uniqueSchema('ops_explorer');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
let ledger: Ledger;
let executedTrace: string | undefined;

async function query(sql: string): Promise<Record<string, unknown>[]> {
  return (await pool.query(sql)).rows;
}

beforeAll(async () => {
  ledger = await createLedger({ connectionString: databaseUrl(), schema, waitSeconds: 0 });
  const invoice = ledger.tool({
    name: 'create_invoice',
    kind: 'mutation',
    handler: async (input: unknown) => ({ invoice: 'inv_2024_0042', input }),
  });
  const charge = ledger.tool({
    name: 'charge_card',
    kind: 'mutation',
    handler: async () => {
      throw new ToolFailure('card declined', { final: true, reason: 'declined' });
    },
  });
  await invoice.call({ amount: 10 }, { tenant: 'acme', key: 'order-1042' });
  executedTrace = harness
    .finishedSpans()
    .find((span) => span.attributes['tool_ledger.idempotency.outcome'] === 'executed')
    ?.spanContext().traceId;
  await invoice.call({ amount: 10 }, { tenant: 'acme', key: 'order-1042' });
  await expect(invoice.call({ amount: 99 }, { tenant: 'acme', key: 'order-1042' })).rejects.toThrow();
  await invoice.call({ amount: 5 }, { tenant: "o'brien & co", key: "it's-1" });
  await expect(charge.call({ amount: 1 }, { tenant: 'globex', key: 'charge-7' })).rejects.toThrow();
  // A run whose process died mid-handler: in_progress, lease lapsed five minutes ago.
  await pool.query(
    `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, attempt,
       lease_owner, lease_expires_at, trace_id, span_id, started_at, expires_at)
     VALUES ('acme', 'book_flight', 'trip-9', 'abc', 'in_progress', 2, 'worker-dead',
       now() - interval '5 minutes', '0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331',
       now() - interval '6 minutes', now() + interval '1 day')`,
  );
});

afterAll(async () => {
  await ledger?.close();
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
  await harness.shutdown();
});

const from = () => new Date(Date.now() - 3600_000);
const to = () => new Date(Date.now() + 60_000);

describe('ledger explorer dashboard', () => {
  it('has SQL panels for search, stuck runs, conflicts and failures', () => {
    expect(sqlTargets.map((t) => t.panel)).toEqual(
      expect.arrayContaining([
        'Runs matching tenant / tool / key',
        'Stuck: in_progress with a lapsed lease',
        'Recent conflicts',
        'Recent failures',
      ]),
    );
    expect(targets.every((t) => t.datasourceUid === 'tool-ledger-postgres')).toBe(true);
  });

  it.each(sqlTargets.map((t) => [t.panel, t] as const))(
    'runs with every filter empty: %s',
    async (_panel, t) => {
      const rows = await query(fill(String(t.target.rawSql), { schema }, from(), to()));
      expect(rows.length).toBeGreaterThan(0);
    },
  );

  it('finds one key by tenant, tool and key, with its trace id', async () => {
    const search = sqlTargets.find((t) => t.panel === 'Runs matching tenant / tool / key')!;
    const rows = await query(
      fill(
        String(search.target.rawSql),
        { schema, tenant: 'acme', tool: 'create_invoice', key: 'order-1042' },
        from(),
        to(),
      ),
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ idempotency_key: 'order-1042', status: 'succeeded', conflict_count: 1 });
    expect(executedTrace).toMatch(/^[0-9a-f]{32}$/);
    expect(rows[0]?.trace_id).toBe(executedTrace);
  });

  it('takes values with quotes safely (sqlstring formatting)', async () => {
    const search = sqlTargets.find((t) => t.panel === 'Runs matching tenant / tool / key')!;
    const rows = await query(
      fill(String(search.target.rawSql), { schema, tenant: "o'brien & co", key: "it's-1" }, from(), to()),
    );
    expect(rows.map((r) => r.idempotency_key)).toEqual(["it's-1"]);
  });

  it('shows the lapsed lease as stuck, the conflict and the failure', async () => {
    const byPanel = async (panel: string, vars: Partial<Vars> = {}) =>
      query(
        fill(
          String(sqlTargets.find((t) => t.panel === panel)!.target.rawSql),
          { schema, ...vars },
          from(),
          to(),
        ),
      );
    expect((await byPanel('Stuck: in_progress with a lapsed lease')).map((r) => r.idempotency_key)).toEqual([
      'trip-9',
    ]);
    expect(await byPanel('Stuck: in_progress with a lapsed lease', { tenant: 'globex' })).toEqual([]);
    const conflicts = await byPanel('Recent conflicts');
    expect(conflicts.map((r) => [r.idempotency_key, r.conflict_count])).toEqual([['order-1042', 1]]);
    const failures = await byPanel('Recent failures');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({
      idempotency_key: 'charge-7',
      final: true,
      error_code: 'TOOL_FAILED',
    });
    expect(failures[0]?.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('links every trace id to Jaeger, and every table returns one', async () => {
    const dashboard = loadDashboard(FILE);
    const tables = dashboard.panels.filter((p) => p.type === 'table');
    expect(tables.length).toBeGreaterThanOrEqual(4);
    for (const panel of tables) {
      const overrides = (
        panel as {
          fieldConfig: {
            overrides: {
              matcher: { options: string };
              properties: { id: string; value: { url: string }[] }[];
            }[];
          };
        }
      ).fieldConfig.overrides;
      const link = overrides
        .find((o) => o.matcher.options === 'trace_id')
        ?.properties.find((p) => p.id === 'links');
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's link syntax, not a JavaScript template
      expect(link?.value[0]?.url, panel.title).toBe('${jaeger_url}/trace/${__value.raw}');
      const sql = String(panel.targets?.[0]?.rawSql);
      const rows = await query(fill(sql, { schema }, from(), to()));
      expect(Object.keys(rows[0] ?? {}), panel.title).toContain('trace_id');
    }
    const names = dashboard.templating.list.map((v) => v.name);
    expect(names).toEqual(expect.arrayContaining(['tenant', 'tool', 'key', 'schema', 'jaeger_url']));
  });
});
