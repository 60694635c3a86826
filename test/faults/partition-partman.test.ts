import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger } from '../../src/index.js';
import { codeBlocks } from '../support/markdown.js';
import { missing, type Requirement } from '../support/requires.js';
import { type FaultServer, startFaultServer } from './support/postgres-server.js';

/**
 * pg_partman 4.7 (Debian bookworm's) as the premaker of the partitioned layout, on a Postgres of the test's own:
 * what `create_parent` does to a schema the ledger converted, the setup docs/operations.md gives (run from the
 * doc's own SQL block), claims beside it, its default partition, its retention against the ledger's drops, and its
 * time zone. Maintenance is `partman.run_maintenance()` called directly; the pg_partman_bgw worker is not used.
 */
const PG_PARTMAN: Requirement = {
  name: 'pg_partman',
  install: 'Debian/Ubuntu: apt-get install postgresql-15-partman',
  missing: () =>
    existsSync('/usr/share/postgresql/15/extension/pg_partman.control')
      ? undefined
      : 'is not installed for Postgres 15',
};

const skip = missing('test/faults/partition-partman.test.ts', 'pg_partman maintenance', PG_PARTMAN);

const WIDTH = 60;
const PREMAKE = 5;
const TTL = 120;

const docs = readFileSync(join(import.meta.dirname, '../../docs/operations.md'), 'utf8');

function replaceOnce(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`the pg_partman setup in docs/operations.md has no "${from}"`);
  return text.replace(from, to);
}

/** The doc's setup block for `schema`, at the test's width and premake; `keepDefault` leaves out its last step. */
function setupSql(schema: string, { keepDefault = false } = {}): string {
  const block = codeBlocks(docs, 'sql').find((b) => b.includes('partman.create_parent('));
  if (!block) throw new Error('docs/operations.md has no pg_partman setup block');
  let sql = replaceOnce(block, `'tool_ledger.tool_runs'`, `'${schema}.tool_runs'`);
  sql = replaceOnce(
    sql,
    'width_seconds constant integer := 86400',
    `width_seconds constant integer := ${WIDTH}`,
  );
  sql = replaceOnce(sql, 'premake constant integer := 4', `premake constant integer := ${PREMAKE}`);
  if (keepDefault) {
    sql = replaceOnce(
      sql,
      `EXECUTE format('DROP TABLE %I.tool_runs_default', split_part(parent, '.', 1));`,
      '',
    );
  }
  return sql;
}

/** A partition's bounds as epoch seconds, and the name the ledger gives the partition starting there. */
interface Part {
  readonly name: string;
  readonly lower: number | null;
  readonly upper: number | null;
  readonly ledgerName: string | null;
  readonly isDefault: boolean;
}

function partsSql(schema: string): string {
  return `WITH b AS (
  SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  WHERE i.inhparent = '${schema}.tool_runs'::regclass
), t AS (
  SELECT name, bound = 'DEFAULT' AS "isDefault",
    substring(bound FROM 'FROM \\(''([^'']*)''\\)')::timestamptz AS lo,
    substring(bound FROM 'TO \\(''([^'']*)''\\)')::timestamptz AS hi
  FROM b
)
SELECT name, "isDefault", extract(epoch FROM lo)::float8 AS lower, extract(epoch FROM hi)::float8 AS upper,
  'tool_runs_p' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS') AS "ledgerName"
FROM t ORDER BY lo NULLS FIRST`;
}

describe.skipIf(skip)('partitioned layout premade by pg_partman 4.7', () => {
  let server: FaultServer;
  const ledgers: Ledger[] = [];

  const parts = (schema: string) => server.sql<Part>(partsSql(schema));
  const now = async () =>
    (await server.sql<{ s: number }>('SELECT extract(epoch FROM now())::float8 AS s'))[0]!.s;
  const maintain = (schema: string) => server.sql(`SELECT partman.run_maintenance('${schema}.tool_runs')`);
  const partitionOf = async (schema: string, key: string) =>
    (
      await server.sql<{ part: string }>(
        `SELECT tableoid::regclass::text AS part FROM ${schema}.tool_runs WHERE idempotency_key = $1`,
        [key],
      )
    ).map((r) => r.part.replace(`${schema}.`, ''));

  /** A converted schema with the ledger's own first partitions, and a tool that counts its runs. */
  async function ledgerSchema(schema: string) {
    const ledger = await createLedger({
      connectionString: server.url,
      schema,
      telemetry: false,
      ttlSeconds: TTL,
      layout: 'partitioned',
      partitionWidthSeconds: WIDTH,
    });
    ledgers.push(ledger);
    const runs = new Map<string, number>();
    // Each call chooses its expiry through the tool's TTL, so a key can land past partman's premade range.
    const tool = (name: string, ttlSeconds: number) =>
      ledger.tool({
        name,
        kind: 'mutation',
        ttlSeconds,
        handler: (_input, ctx) => {
          const key = ctx.key ?? '';
          runs.set(key, (runs.get(key) ?? 0) + 1);
          return `done ${key}`;
        },
      });
    return { ledger, runs, tool };
  }

  /** Every range partition but the legacy one is named as the ledger names it, one width wide. */
  function expectLedgerNames(list: readonly Part[]) {
    for (const p of list.filter((p) => !p.isDefault && p.name !== 'tool_runs_legacy')) {
      expect(p.name).toBe(p.ledgerName);
      expect(p.upper! - p.lower!).toBe(WIDTH);
    }
  }

  beforeAll(async () => {
    // partman formats the names it makes in the session's time zone, the ledger in UTC (see the last test).
    server = await startFaultServer({ settings: { timezone: 'UTC' } });
    await server.sql('CREATE SCHEMA partman');
    await server.sql('CREATE EXTENSION pg_partman SCHEMA partman');
  }, 60_000);

  afterAll(async () => {
    for (const ledger of ledgers) await ledger.close({ timeoutSeconds: 0.5 });
    await server?.destroy();
  });

  it("refuses create_parent as is beside the ledger's partitions, and cannot read the ledger's names with its own", async () => {
    const schema = 'pm_as_is';
    const { tool } = await ledgerSchema(schema);
    const before = await parts(schema);
    expect(before.length).toBeGreaterThan(0);

    // Its first partitions start premake widths back from now, where the ledger's are.
    await expect(
      server.sql(
        `SELECT partman.create_parent('${schema}.tool_runs', 'expires_at', 'native', '${WIDTH} seconds')`,
      ),
    ).rejects.toThrow(/would overlap partition "tool_runs_p\d{8}t\d{6}"/);
    expect(await parts(schema)).toEqual(before);

    // Started after the ledger's newest partition it goes through, in names of its own and with a default.
    const newest = Math.max(...before.map((p) => p.upper!));
    await server.sql(
      `SELECT partman.create_parent('${schema}.tool_runs', 'expires_at', 'native', '${WIDTH} seconds',
        p_premake := ${PREMAKE}, p_start_partition := to_timestamp(${newest})::text, p_date_trunc_interval := 'second')`,
    );
    const after = await parts(schema);
    const made = after.filter((p) => !before.some((b) => b.name === p.name));
    expect(made.some((p) => p.isDefault && p.name === 'tool_runs_default')).toBe(true);
    const ranged = made.filter((p) => !p.isDefault);
    expect(ranged.length).toBeGreaterThan(0);
    for (const p of ranged) expect(p.name).toMatch(/^tool_runs_p\d{4}_\d\d_\d\d_\d{6}$/);
    expect(Math.min(...ranged.map((p) => p.lower!))).toBe(newest);

    // Its maintenance orders the partitions by parsing their names, and the ledger's do not parse.
    await expect(maintain(schema)).rejects.toThrow(/invalid value/);

    // The ledger's functions work beside partman's names: the ensure skips the ranges partman's partitions hold
    // ("would overlap"), the maintain reads bounds, not names.
    const horizon = Math.max(...ranged.map((p) => p.upper!)) - 1;
    const ensured = await server.sql<{ name: string }>(
      `SELECT * FROM ${schema}.tool_ledger_ensure_partitions(now(), to_timestamp(${horizon})) AS name`,
    );
    expect(ensured).toEqual([]);
    const maintained = await server.sql<{ action: string }>(
      `SELECT * FROM ${schema}.tool_ledger_maintain(${PREMAKE * WIDTH}, 0)`,
    );
    expect(maintained.filter((r) => r.action !== 'created' && r.action !== 'dropped')).toEqual([]);
    const ping = tool('ping', TTL);
    expect(await ping.call({}, { key: 'a' })).toBe('done a');
    expect(await partitionOf(schema, 'a')).toHaveLength(1);
  }, 60_000);

  it("keeps claims right with the documented setup: partman premakes in the ledger's names, no default", async () => {
    const schema = 'pm_setup';
    const { runs, tool } = await ledgerSchema(schema);
    const ledgerMade = await parts(schema);
    await server.sql(setupSql(schema));

    let list = await parts(schema);
    expect(list.some((p) => p.isDefault)).toBe(false);
    expectLedgerNames(list);
    // The ledger's partitions were left as they were.
    for (const p of ledgerMade) expect(list.map((l) => l.name)).toContain(p.name);

    await maintain(schema);
    list = await parts(schema);
    expectLedgerNames(list);
    const premadeTo = Math.max(...list.map((p) => p.upper!));
    // infinite_time_partitions: premake counts from now, whether or not rows reach that far.
    expect(premadeTo).toBeGreaterThanOrEqual((await now()) + (PREMAKE - 1) * WIDTH);
    // A second run makes nothing, or the one partition a minute boundary passed meanwhile made due.
    await maintain(schema);
    expect((await parts(schema)).length - list.length).toBeLessThanOrEqual(1);

    // The ledger's own ensure finds every partition of partman's range under the name it would give it.
    const ensured = await server.sql(
      `SELECT * FROM ${schema}.tool_ledger_ensure_partitions(now(), to_timestamp(${premadeTo - 1}))`,
    );
    expect(ensured).toEqual([]);

    // Fresh keys and replays.
    const ping = tool('ping', TTL);
    for (const key of ['a', 'b']) expect(await ping.call({}, { key })).toBe(`done ${key}`);
    for (const key of ['a', 'b']) expect(await ping.call({}, { key })).toBe(`done ${key}`);
    expect([runs.get('a'), runs.get('b')]).toEqual([1, 1]);

    // A key whose expiry lies past partman's range: the claim's fallback makes its partition, in the ledger's
    // name, which partman's next run reads as its newest and carries on after.
    const farTtl = Math.ceil(premadeTo - (await now())) + 10 * WIDTH + WIDTH / 2;
    const far = tool('far', farTtl);
    expect(await far.call({}, { key: 'far' })).toBe('done far');
    expect(await far.call({}, { key: 'far' })).toBe('done far');
    expect(runs.get('far')).toBe(1);
    const [farPart] = await partitionOf(schema, 'far');
    expect(farPart).toMatch(/^tool_runs_p\d{8}t\d{6}$/);
    list = await parts(schema);
    expectLedgerNames(list);
    const farUpper = list.find((p) => p.name === farPart)!.upper!;
    expect(farUpper).toBe(Math.max(...list.map((p) => p.upper!)));

    await maintain(schema);
    const afterFar = await parts(schema);
    expectLedgerNames(afterFar);
    // partman counts its premake from its newest partition, the fallback's: it makes none between (the gap stays
    // for the fallback and the ledger's maintain to fill).
    const between = afterFar.filter((p) => p.lower! >= premadeTo && p.upper! <= farUpper - WIDTH);
    expect(between).toEqual([]);

    // A key in that gap: the fallback again.
    const gap = tool('gap', Math.ceil(premadeTo - (await now())) + 3 * WIDTH + WIDTH / 2);
    expect(await gap.call({}, { key: 'gap' })).toBe('done gap');
    expect(await gap.call({}, { key: 'gap' })).toBe('done gap');
    expect(runs.get('gap')).toBe(1);
    expect((await partitionOf(schema, 'gap'))[0]).toMatch(/^tool_runs_p\d{8}t\d{6}$/);
    await maintain(schema);
    expectLedgerNames(await parts(schema));
    // Replays of the keys from before still find their one row.
    expect(await ping.call({}, { key: 'a' })).toBe('done a');
    expect(await far.call({}, { key: 'far' })).toBe('done far');
    expect([runs.get('a'), runs.get('far')]).toEqual([1, 1]);
  }, 60_000);

  it('puts a claim past the premade range into the default partition, which then blocks both maintenances', async () => {
    const schema = 'pm_default';
    const { runs, tool } = await ledgerSchema(schema);
    await server.sql(setupSql(schema, { keepDefault: true }));
    await maintain(schema);
    const list = await parts(schema);
    expect(list.some((p) => p.isDefault)).toBe(true);
    const premadeTo = Math.max(...list.map((p) => p.upper ?? 0));

    const far = tool('far', Math.ceil(premadeTo - (await now())) + 10 * WIDTH + WIDTH / 2);
    expect(await far.call({}, { key: 'far' })).toBe('done far');
    expect(await far.call({}, { key: 'far' })).toBe('done far');
    expect(runs.get('far')).toBe(1);
    // No "no partition" error, so no fallback: the row sits in the default.
    expect(await partitionOf(schema, 'far')).toEqual(['tool_runs_default']);

    // A partition for its range can no longer be made, by anyone.
    const blocked =
      /updated partition constraint for default partition "tool_runs_default" would be violated/;
    const farExpiry = `(SELECT expires_at FROM ${schema}.tool_runs WHERE idempotency_key = 'far')`;
    await expect(
      server.sql(`SELECT * FROM ${schema}.tool_ledger_ensure_partitions(${farExpiry}, ${farExpiry})`),
    ).rejects.toThrow(blocked);
    await expect(
      server.sql(`SELECT * FROM ${schema}.tool_ledger_maintain(${20 * WIDTH}, 0)`),
    ).rejects.toThrow(blocked);
    // partman premakes from the default's newest row, so its run fails on it at once.
    await expect(maintain(schema)).rejects.toThrow(blocked);
    // tool_ledger_maintain never drops the default: its rows stay after they expire.
    expect(
      (
        await server.sql<{ action: string; partition_name: string }>(
          `SELECT * FROM ${schema}.tool_ledger_maintain(0, 0)`,
        )
      ).filter((r) => r.partition_name === 'tool_runs_default'),
    ).toEqual([]);
  }, 60_000);

  it("drops only with the ledger's maintain: partman's retention takes a partition that holds a live lease", async () => {
    const schema = 'pm_retention';
    const { tool } = await ledgerSchema(schema);
    await server.sql(setupSql(schema));
    await maintain(schema);
    const ping = tool('ping', TTL);
    for (const key of ['leased', 'done']) await ping.call({}, { key });
    // Two ended partitions, made as the ledger makes them: one holds a run whose handler outlasted its expiry
    // (its lease still live), one a completed run.
    const ended = Math.floor((await now()) / WIDTH) * WIDTH - 10 * WIDTH;
    await server.sql(
      `SELECT * FROM ${schema}.tool_ledger_ensure_partitions(to_timestamp(${ended}), to_timestamp(${ended + WIDTH}))`,
    );
    await server.sql(
      `UPDATE ${schema}.tool_runs SET expires_at = to_timestamp(${ended + 1}), status = 'in_progress',
         lease_expires_at = now() + interval '1 hour' WHERE idempotency_key = 'leased'`,
    );
    await server.sql(
      `UPDATE ${schema}.tool_runs SET expires_at = to_timestamp(${ended + WIDTH + 1}) WHERE idempotency_key = 'done'`,
    );
    const [leasedPart] = await partitionOf(schema, 'leased');
    const [donePart] = await partitionOf(schema, 'done');
    expect(leasedPart).not.toBe(donePart);

    // The ledger keeps the leased one and drops the other; partman's next run is not disturbed by the drop.
    const actions = await server.sql<{ action: string; partition_name: string }>(
      `SELECT * FROM ${schema}.tool_ledger_maintain(0, 0)`,
    );
    expect(actions).toContainEqual(expect.objectContaining({ action: 'kept', partition_name: leasedPart }));
    expect(actions).toContainEqual(expect.objectContaining({ action: 'dropped', partition_name: donePart }));
    await maintain(schema);
    expect(await partitionOf(schema, 'leased')).toEqual([leasedPart]);

    // partman's retention, by the range alone: the leased run leaves the table (detached, retention_keep_table's
    // default), and the ledger no longer sees it.
    await server.sql(
      `UPDATE partman.part_config SET retention = '1 minute' WHERE parent_table = '${schema}.tool_runs'`,
    );
    await maintain(schema);
    expect(await partitionOf(schema, 'leased')).toEqual([]);
    expect((await parts(schema)).map((p) => p.name)).not.toContain(leasedPart);
  }, 60_000);

  it('premakes after a populated legacy partition, whose MINVALUE bound its retention cannot read', async () => {
    const schema = 'pm_legacy';
    const table = await createLedger({
      connectionString: server.url,
      schema,
      telemetry: false,
      ttlSeconds: TTL,
    });
    await table.tool({ name: 'ping', kind: 'mutation', handler: () => 'pong' }).call({}, { key: 'old' });
    await table.close({ timeoutSeconds: 0.5 });
    const { tool } = await ledgerSchema(schema);
    expect(await partitionOf(schema, 'old')).toEqual(['tool_runs_legacy']);
    await server.sql(setupSql(schema));
    await maintain(schema);
    const list = await parts(schema);
    expect(list[0]).toMatchObject({ name: 'tool_runs_legacy', lower: null });
    expectLedgerNames(list);
    expect(Math.max(...list.map((p) => p.upper!))).toBeGreaterThanOrEqual(
      (await now()) + (PREMAKE - 1) * WIDTH,
    );
    expect(await tool('ping', TTL).call({}, { key: 'new' })).toBe('done new');

    await server.sql(
      `UPDATE partman.part_config SET retention = '1 minute' WHERE parent_table = '${schema}.tool_runs'`,
    );
    await expect(maintain(schema)).rejects.toThrow(
      /invalid input syntax for type timestamp with time zone: "MINVALUE"/,
    );
    await server.sql(
      `UPDATE partman.part_config SET retention = NULL WHERE parent_table = '${schema}.tool_runs'`,
    );
    await maintain(schema);
  }, 60_000);

  it("names partitions in the session's time zone: one run outside UTC leaves a range the ledger cannot claim into", async () => {
    const schema = 'pm_zone';
    const { tool } = await ledgerSchema(schema);
    await server.sql(setupSql(schema));
    await maintain(schema);
    const premadeTo = Math.max(...(await parts(schema)).map((p) => p.upper!));
    // One more partition, made by a run at UTC+05:30.
    await server.sql(
      `UPDATE partman.part_config SET premake = premake + 1 WHERE parent_table = '${schema}.tool_runs'`,
    );
    await server.sql(
      `BEGIN; SET LOCAL TIME ZONE 'Asia/Kolkata'; SELECT partman.run_maintenance('${schema}.tool_runs'); COMMIT`,
    );
    const list = await parts(schema);
    // One, or two if a minute boundary passed since the run before.
    const odd = list.filter((p) => p.name !== p.ledgerName);
    expect(odd.length).toBeGreaterThanOrEqual(1);
    expect(odd[0]!.lower).toBe(premadeTo);
    // Its name is the ledger's for the range 5 h 30 min later: the ledger's ensure finds that name and skips the
    // range, so a claim expiring there fails after its retries.
    const named = odd[0]!.lower! + 5.5 * 3600;
    const claim = tool('zone', Math.ceil(named - (await now())) + WIDTH / 2);
    await expect(claim.call({}, { key: 'zone' })).rejects.toThrow(
      /no partition of relation "tool_runs" found for row/,
    );
    expect(await partitionOf(schema, 'zone')).toEqual([]);
  }, 60_000);
});
