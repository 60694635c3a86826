import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger, ToolFailure } from '../../src/index.js';
import { rotateStoredSecret } from '../../src/ledger/settings.js';
import { hashKey } from '../../src/telemetry/key-hash.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';
import { dashboardTargets, loadDashboard } from './support/configs.js';
import {
  type ExplorerAccess,
  fillExplorerSql,
  percentEncode,
  type SqlVars,
  setUpExplorer,
} from './support/explorer.js';

/**
 * Every SQL query of dashboards/ledger-explorer.json, with its Grafana variables filled in the way Grafana's
 * PostgreSQL data source fills them, runs against real Postgres holding rows written by the real library, as
 * the read-only role of postgres/explorer.sql that the shipped datasource logs in as.
 */

const FILE = 'ledger-explorer.json';
const targets = dashboardTargets(FILE);
const sqlTargets = targets.filter((t) => t.datasourceType === 'grafana-postgresql-datasource');
const SECRET = 'explorer-test-secret';
const USER = 'user-4711';
const EMAIL_KEY = 'maria@example.com';
const LABELLED_KEY = 'refund:priya';
const REASON = 'declined for maria.rossi@example.org';

const harness = new TelemetryHarness().registerGlobal();
const schema = uniqueSchema('ops_explorer');
const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
let ledger: Ledger;
let explorer: ExplorerAccess;
let executedTrace: string | undefined;

const from = () => new Date(Date.now() - 3600_000);
const to = () => new Date(Date.now() + 60_000);
const sqlOf = (panel: string) => String(sqlTargets.find((t) => t.panel === panel)?.target.rawSql);

async function asReader(sql: string): Promise<Record<string, unknown>[]> {
  return (await explorer.readerPool.query(sql)).rows;
}
async function panel(name: string, vars: SqlVars = {}): Promise<Record<string, unknown>[]> {
  return asReader(fillExplorerSql(sqlOf(name), vars, from(), to()));
}

beforeAll(async () => {
  ledger = await createLedger({
    connectionString: databaseUrl(),
    schema,
    waitSeconds: 0,
    ...TEST_DISTRIBUTION,
  });
  const invoice = ledger.tool({
    name: 'create_invoice',
    kind: 'mutation',
    handler: async (input: unknown) => ({ invoice: 'inv_2024_0042', input }),
  });
  const charge = ledger.tool({
    name: 'charge_card',
    kind: 'mutation',
    handler: async () => {
      throw new ToolFailure(REASON, { final: true, reason: REASON });
    },
  });
  await invoice.call({ amount: 10 }, { tenant: 'acme', key: 'order-1042', user: USER });
  executedTrace = harness
    .finishedSpans()
    .find((span) => span.attributes['tool_ledger.idempotency.outcome'] === 'executed')
    ?.spanContext().traceId;
  await invoice.call({ amount: 10 }, { tenant: 'acme', key: 'order-1042', user: USER });
  await expect(
    invoice.call({ amount: 99 }, { tenant: 'acme', key: 'order-1042', user: USER }),
  ).rejects.toThrow();
  await invoice.call({ amount: 5 }, { tenant: "o'brien & co", key: "it's-1" });
  await invoice.call({ amount: 7 }, { tenant: 'acme', key: EMAIL_KEY, user: USER });
  await invoice.call({ amount: 8 }, { tenant: 'acme', key: LABELLED_KEY, user: USER });
  await expect(
    charge.call({ amount: 1 }, { tenant: 'globex', key: 'charge-7', user: USER }),
  ).rejects.toThrow();
  // A run whose process died mid-handler: in_progress, lease lapsed five minutes ago.
  await admin.query(
    `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, attempt,
       lease_owner, lease_expires_at, trace_id, span_id, started_at, expires_at)
     VALUES ('acme', 'book_flight', 'trip-9', 'abc', 'in_progress', 2, 'worker-dead',
       now() - interval '5 minutes', '0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331',
       now() - interval '6 minutes', now() + interval '1 day')`,
  );
  explorer = await setUpExplorer(admin, databaseUrl(), schema, SECRET);
});

afterAll(async () => {
  await ledger?.close();
  await explorer?.drop();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
  await harness.shutdown();
});

describe('ledger explorer dashboard', () => {
  it('has SQL panels for search, stuck runs, conflicts and failures, all on the view', () => {
    expect(sqlTargets.map((t) => t.panel)).toEqual(
      expect.arrayContaining([
        'Runs matching tenant / tool / key',
        'Stuck: in_progress with a lapsed lease',
        'Recent conflicts',
        'Recent failures',
      ]),
    );
    expect(targets.every((t) => t.datasourceUid === 'tool-ledger-postgres')).toBe(true);
    for (const t of sqlTargets) expect(String(t.target.rawSql), t.panel).toMatch(/\bFROM ledger_runs\b/);
  });

  it.each(sqlTargets.map((t) => [t.panel, t] as const))(
    'runs as the read-only role with every filter empty: %s',
    async (name) => {
      expect((await panel(name)).length).toBeGreaterThan(0);
    },
  );

  it('finds one key by tenant, tool and key, with its trace id', async () => {
    const rows = await panel('Runs matching tenant / tool / key', {
      tenant: 'acme',
      tool: 'create_invoice',
      key: 'order-1042',
    });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ idempotency_key: 'order-1042', status: 'succeeded', conflict_count: 1 });
    expect(rows[0]?.key_hash).toBe(hashKey('order-1042', SECRET));
    expect(executedTrace).toMatch(/^[0-9a-f]{32}$/);
    expect(rows[0]?.trace_id).toBe(executedTrace);
  });

  it('shows a key that may hold personal data only as the HMAC telemetry emits, and finds it by that or by the raw key', async () => {
    const hash = hashKey(EMAIL_KEY, SECRET);
    const rows = await panel('Runs matching tenant / tool / key', { key: hash });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ idempotency_key: null, key_hash: hash, tenant_id: 'acme' });
    // Support may type the raw key: the view hashes it, and still never shows it.
    const typed = await panel('Runs matching tenant / tool / key', { key: EMAIL_KEY });
    expect(typed).toHaveLength(1);
    expect(typed[0]).toMatchObject({ idempotency_key: null, key_hash: hash });
    expect(JSON.stringify(typed)).not.toContain(EMAIL_KEY);
    // It hashes only keys the ledger holds: no oracle for reversing the hashes in Jaeger by trying candidates.
    expect(await asReader(`SELECT key_hash_of('someone.else@example.com') AS h`)).toEqual([{ h: null }]);
    // A label:value key is hashed by telemetry, so the view hides it too.
    const labelled = await panel('Runs matching tenant / tool / key', { key: LABELLED_KEY });
    expect(labelled).toEqual([
      expect.objectContaining({ idempotency_key: null, key_hash: hashKey(LABELLED_KEY, SECRET) }),
    ]);
  });

  it('takes values with quotes safely (percent-encoded, decoded in SQL)', async () => {
    const rows = await panel('Runs matching tenant / tool / key', {
      tenant: "o'brien & co",
      tool: 'create_invoice',
    });
    // A quote is no character of a key worth showing: it may be free text.
    expect(rows.map((r) => [r.idempotency_key, r.key_hash])).toEqual([[null, hashKey("it's-1", SECRET)]]);
  });

  it('shows the lapsed lease as stuck, the conflict and the failure', async () => {
    expect((await panel('Stuck: in_progress with a lapsed lease')).map((r) => r.idempotency_key)).toEqual([
      'trip-9',
    ]);
    expect(await panel('Stuck: in_progress with a lapsed lease', { tenant: 'globex' })).toEqual([]);
    const conflicts = await panel('Recent conflicts');
    expect(conflicts.map((r) => [r.idempotency_key, r.conflict_count])).toEqual([['order-1042', 1]]);
    const failures = await panel('Recent failures');
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
    for (const table of tables) {
      const overrides = (
        table as {
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
      expect(link?.value[0]?.url, table.title).toBe('${jaeger_url}/trace/${__value.raw}');
      const rows = await asReader(fillExplorerSql(String(table.targets?.[0]?.rawSql), {}, from(), to()));
      expect(Object.keys(rows[0] ?? {}), table.title).toContain('trace_id');
    }
  });
});

describe('the explorer datasource role', () => {
  it('reads a view without user ids, results, error messages or reasons', async () => {
    const rows = await asReader('SELECT * FROM ledger_runs');
    expect(rows.length).toBeGreaterThan(0);
    const columns = Object.keys(rows[0] ?? {});
    for (const hidden of ['user_id', 'result_json', 'error_json', 'span_id'])
      expect(columns).not.toContain(hidden);
    // The run's id is shown, for the console's run pages: a sequence number says nothing the rows and their
    // created_at do not already say.
    expect(columns).toContain('id');
    const text = JSON.stringify(rows);
    for (const secret of [USER, EMAIL_KEY, REASON, 'inv_2024_0042', 'declined'])
      expect(text).not.toContain(secret);
  });

  it.each([
    ['the ledger table', `SELECT user_id FROM "${schema}".tool_runs`],
    ['the HMAC pads', 'SELECT * FROM key_hash_pads'],
    ['the HMAC pads of the stored secret', 'SELECT * FROM key_hash_pads_now()'],
    ['the stored key-hash secret', `SELECT value FROM "${schema}".tool_ledger_settings`],
    ['a write', `UPDATE ledger_runs SET status = 'failed'`],
    ['a new table', 'CREATE TABLE stolen (x int)'],
    ['a shell', `COPY (SELECT 1) TO PROGRAM 'id'`],
    ['a server file', `SELECT pg_read_file('/etc/passwd')`],
    ['the password hashes', 'SELECT rolpassword FROM pg_authid'],
  ])('cannot reach %s', async (_what, sql) => {
    await expect(asReader(sql)).rejects.toThrow();
  });

  it('is not a superuser and cannot switch to another role', async () => {
    const [role] = await asReader(
      'SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user',
    );
    expect(role).toEqual({ rolsuper: false, rolcreaterole: false, rolcreatedb: false });
    await expect(asReader('SET ROLE postgres')).rejects.toThrow();
  });
});

describe('dashboard variables', () => {
  let legacy: pg.Pool;
  beforeAll(() => {
    legacy = new pg.Pool({
      connectionString: explorer.readerUrl,
      max: 1,
      options: '-c standard_conforming_strings=off -c escape_string_warning=off',
    });
  });
  afterAll(async () => {
    await legacy?.end();
  });
  const variables = loadDashboard(FILE).templating.list;
  const sqlVariables = ['tenant', 'tool', 'key'];

  it("reach SQL only as url_decoded('<name percent-encoded>'); the rest are constants that a URL cannot set", () => {
    for (const t of sqlTargets) {
      const sql = String(t.target.rawSql);
      const uses = [...sql.matchAll(/\$\{?([A-Za-z_]+)(:[a-z]+)?\}?/g)].filter(
        (m) => !(m[1] as string).startsWith('__'),
      );
      for (const use of uses) {
        expect(sqlVariables, `${t.panel}: ${use[0]}`).toContain(use[1]);
        expect(use[2], `${t.panel}: ${use[0]}`).toBe(':percentencode');
      }
      // Every use sits alone inside a literal that only url_decoded reads.
      const wrapped = [...sql.matchAll(/url_decoded\('\$\{[a-z]+:percentencode\}'\)/g)].length;
      expect(wrapped, t.panel).toBe(uses.length);
    }
    for (const v of variables) {
      if (sqlVariables.includes(String(v.name))) expect(v.type).toBe('textbox');
      else expect(v.type, String(v.name)).toBe('constant');
    }
  });

  // Values an attacker can put in ?var-tenant=... and the other variables.
  const payloads = [
    "' OR '1'='1",
    "x' OR true --",
    "' UNION SELECT tenant_id, tool_name FROM ledger_runs --",
    "'; DROP VIEW ledger_runs; --",
    "\\' OR 1=1 --",
    '$$ OR true $$',
    "' || (SELECT string_agg(idempotency_key, ',') FROM ledger_runs) || '",
    "%' OR tenant_id LIKE '%",
  ];
  const cases = sqlVariables.flatMap((name) =>
    sqlTargets.flatMap((t) => payloads.map((payload) => [name, t.panel, payload] as const)),
  );

  it.each(cases)('%s: injecting into "%s" matches nothing: %s', async (name, panelName, payload) => {
    const rows = await panel(panelName, { [name]: payload });
    const usesVariable = sqlOf(panelName).includes(`\${${name}:percentencode}`);
    if (usesVariable) expect(rows).toEqual([]);
    else expect(rows.length).toBe((await panel(panelName)).length);
  });

  // A server (or role, or session) with standard_conforming_strings = off reads backslash escapes in '...': a
  // value with \' ended :sqlstring's literal there. Percent-encoded values hold no quote and no backslash.
  it.each(cases)(
    '%s: injecting into "%s" matches nothing with standard_conforming_strings = off: %s',
    async (name, panelName, payload) => {
      const sql = fillExplorerSql(sqlOf(panelName), { [name]: payload }, from(), to());
      const rows = (await legacy.query(sql)).rows;
      const usesVariable = sqlOf(panelName).includes(`\${${name}:percentencode}`);
      if (usesVariable) expect(rows).toEqual([]);
      else expect(rows.length).toBe((await panel(panelName)).length);
    },
  );

  it("would have been open with :sqlstring's quoting under standard_conforming_strings = off", async () => {
    const sqlstring = (value: string) => `'${value.replaceAll("'", "''")}'`;
    const payload = "\\' OR 1=1 --";
    const old = `SELECT count(*)::int AS n FROM ledger_runs WHERE tenant_id = ${sqlstring(payload)}`;
    expect((await legacy.query(old)).rows[0].n).toBe(6);
    expect((await legacy.query(`SELECT url_decoded('${percentEncode(payload)}') AS v`)).rows[0].v).toBe(
      payload,
    );
  });

  it('left the view in place after every injection', async () => {
    expect((await asReader('SELECT count(*)::int AS n FROM ledger_runs'))[0]?.n).toBe(6);
  });
});

describe('the view with no key_hash_secret given', () => {
  let stored: ExplorerAccess;
  const keyHashOf = async (access: ExplorerAccess, key: string) => {
    const rows = (
      await access.readerPool.query('SELECT key_hash FROM ledger_runs WHERE tenant_id = $1', ['acme'])
    ).rows as { key_hash: string }[];
    const secretRows = await admin.query(
      `SELECT value FROM "${schema}".tool_ledger_settings WHERE name = 'key_hash_secret'`,
    );
    const secret = secretRows.rows[0]?.value as string;
    return { hashes: rows.map((r) => r.key_hash), expected: hashKey(key, secret) };
  };

  beforeAll(async () => {
    stored = await setUpExplorer(admin, databaseUrl(), schema, '', `${schema}_explorer_stored`);
  });

  afterAll(async () => {
    await stored?.drop();
  });

  it('hashes under the deployment secret the services emit under, and follows a rotation at once', async () => {
    // The ledger of this file set no secret, so its spans carry hashes under the one stored in its schema.
    const emitted = harness
      .finishedSpans()
      .map((span) => span.attributes['tool_ledger.idempotency.key_hash'])
      .filter((hash) => hash !== undefined);
    const now = await keyHashOf(stored, EMAIL_KEY);
    expect(emitted).toContain(now.expected);
    expect(now.hashes).toContain(now.expected);

    await rotateStoredSecret(
      { query: async (text, params) => ({ rows: (await admin.query(text, params)).rows }) },
      schema,
    );

    const rotated = await keyHashOf(stored, EMAIL_KEY);
    expect(rotated.expected).not.toBe(now.expected);
    expect(rotated.hashes).toContain(rotated.expected);
    // The explorer given a secret keeps hashing under it.
    const given = await asReader('SELECT key_hash FROM ledger_runs');
    expect(given.map((r) => r.key_hash)).toContain(hashKey(EMAIL_KEY, SECRET));
  });
});
