import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parameterHash } from '../../src/contract/fingerprint.js';
import type { Ledger } from '../../src/index.js';
import { CLAIM_TRIES, KEY_LOCK_CLASS, listPartitionsSql } from '../../src/ledger/partitioned-sql.js';
import { completeSql } from '../../src/ledger/sql/runs.js';
import { databaseUrl, postgresBackend, uniqueSchema } from '../support/db.js';
import { rejection } from '../support/rejection.js';

/**
 * The partitioned layout (`layout: 'partitioned'`) on the shared Postgres: a key stays in one row across partitions,
 * the purge drops whole partitions, and a table-layout schema converts in place. The contract suite runs on it too
 * (test/db/contract.test.ts).
 */
const HOUR = 3600;
// Small pools: the file keeps its ledgers open until the end, and the other test worker shares the server's
// max_connections (100 by default; seen exhausted in a CI run with the default pool of 20).
const backend = postgresBackend({ poolSize: 2 });
// No replay cache: tests move rows by hand, which a process's cache would not see.
const partitioned = { layout: 'partitioned', partitionWidthSeconds: HOUR, replayCacheEntries: 0 } as const;

type Opened = Ledger & { schema: string };

async function rowsOf(ledger: Opened, key: string) {
  return backend.sql<{ id: string; part: string; attempt: number; status: string }>(
    `SELECT id::text AS id, tableoid::regclass::text AS part, attempt, status FROM "${ledger.schema}".tool_runs
     WHERE idempotency_key = $1`,
    [key],
  );
}

async function partitions(schema: string) {
  return backend.sql<{ name: string; bound: string }>(listPartitionsSql(schema));
}

/** Makes the partitions of the past hours, so tests can move rows there. */
async function makePastPartitions(schema: string, hours: number) {
  await backend.sql(
    `SELECT count(*) FROM "${schema}".tool_ledger_ensure_partitions(now() - make_interval(hours => $1), now())`,
    [hours],
  );
}

async function connectOne(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl() });
  await client.connect();
  return client;
}

describe('partitioned layout', () => {
  it('range-partitions tool_runs by expiry and records the layout, refusing to open it otherwise', async () => {
    const ledger = await backend.open(partitioned);
    const [kind] = await backend.sql<{ relkind: string; key: string }>(
      `SELECT c.relkind::text AS relkind, pg_get_partkeydef(c.oid) AS key FROM pg_class c
       WHERE c.oid = to_regclass('"${ledger.schema}".tool_runs')`,
    );
    expect(kind).toEqual({ relkind: 'p', key: 'RANGE (expires_at)' });
    // Partitions for the whole TTL and two widths more were made at the start.
    expect((await partitions(ledger.schema)).length).toBeGreaterThanOrEqual(24);

    const asTable = await rejection(backend.open({ schema: ledger.schema }));
    expect(asTable).toMatchObject({ code: 'CONFIG_INVALID' });
    expect(asTable.message).toMatch(/layout: 'partitioned' and partitionWidthSeconds: 3600/);
    const otherWidth = await rejection(
      backend.open({ schema: ledger.schema, layout: 'partitioned', partitionWidthSeconds: 60 }),
    );
    expect(otherWidth.message).toMatch(/partitionWidthSeconds: 3600/);

    const typo = await rejection(backend.open({ layout: 'partitions' as never }));
    expect(typo.message).toMatch(/layout must be 'table' or 'partitioned'/);

    const table = await backend.open({});
    const unconverted = await rejection(
      backend.open({ schema: table.schema, ...partitioned, migrate: false }),
    );
    expect(unconverted).toMatchObject({ code: 'CONFIG_INVALID' });
    expect(unconverted.message).toMatch(/tool-ledger migrate --layout partitioned/);
  });

  it('takes over an expired key whose row sits in an older partition, moving it to the current one', async () => {
    const ledger = await backend.open(partitioned);
    await makePastPartitions(ledger.schema, 3);
    let runs = 0;
    const tool = ledger.tool({ name: 'charge', kind: 'mutation', handler: () => ++runs });
    await tool.call({}, { key: 'k' });
    const [before] = await rowsOf(ledger, 'k');
    await backend.sql(
      `UPDATE "${ledger.schema}".tool_runs SET expires_at = now() - interval '2 hours' WHERE idempotency_key = 'k'`,
    );
    const [old] = await rowsOf(ledger, 'k');
    expect(old?.part).not.toBe(before?.part);
    const again = await tool.invoke({}, { key: 'k' });
    expect(again).toMatchObject({ outcome: 'executed', attempt: 1, value: 2 });
    const after = await rowsOf(ledger, 'k');
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: before?.id, status: 'succeeded' });
    expect(after[0]?.part).not.toBe(old?.part);
    expect((await tool.invoke({}, { key: 'k' })).outcome).toBe('replayed');
  });

  it('runs a key once when parallel claims from several processes would put it in different partitions', async () => {
    // Four ledgers (four pools, as four processes), each tool with another TTL: a fresh row of the short ones
    // lands in the current partition, of the long ones hours later.
    const first = await backend.open({ ...partitioned, waitSeconds: 5 });
    const ledgers = [first];
    for (let i = 0; i < 3; i++)
      ledgers.push(await backend.open({ ...partitioned, schema: first.schema, waitSeconds: 5 }));
    await makePastPartitions(first.schema, 3);
    const executed = new Map<string, number>();
    const tools = ledgers.map((ledger, i) =>
      ledger.tool({
        name: 'charge',
        kind: 'mutation',
        ttlSeconds: i % 2 === 0 ? 60 : 5 * HOUR,
        handler: async (_input: unknown, ctx) => {
          const key = ctx.key ?? '';
          executed.set(key, (executed.get(key) ?? 0) + 1);
          await sleep(20);
          return key;
        },
      }),
    );
    const keys = Array.from({ length: 12 }, (_, i) => `p-${i}`);
    // Half the keys start from an expired row two hours back, so every claim of them is a takeover race.
    for (const key of keys.slice(0, 6)) await tools[0]!.call({}, { key });
    await backend.sql(
      `UPDATE "${first.schema}".tool_runs SET expires_at = now() - interval '2 hours' WHERE idempotency_key = ANY($1)`,
      [keys.slice(0, 6)],
    );
    executed.clear();
    const outcomes = await Promise.all(
      keys.flatMap((key) => tools.flatMap((tool) => [tool.invoke({}, { key }), tool.invoke({}, { key })])),
    );
    for (const key of keys) {
      expect(executed.get(key)).toBe(1);
      expect(await rowsOf(first, key)).toHaveLength(1);
    }
    expect(outcomes.filter((o) => o.outcome === 'executed')).toHaveLength(keys.length);
    expect(outcomes.filter((o) => o.outcome === 'replayed')).toHaveLength(keys.length * 7);
  });

  it('retries a takeover whose row a concurrent update moved to another partition (40001) and runs it once', async () => {
    const ledger = await backend.open(partitioned);
    await makePastPartitions(ledger.schema, 4);
    let runs = 0;
    const tool = ledger.tool({ name: 'charge', kind: 'mutation', handler: () => ++runs });
    await tool.call({}, { key: 'moved' });
    const t = `"${ledger.schema}".tool_runs`;
    await backend.sql(
      `UPDATE ${t} SET expires_at = now() - interval '3 hours' WHERE idempotency_key = 'moved'`,
    );
    // Another session moves the expired row to another past partition and holds its lock; the takeover claim reads
    // the old version, waits on the lock, and finds the row gone from its partition when the mover commits.
    const mover = await connectOne();
    try {
      await mover.query('BEGIN');
      await mover.query(
        `UPDATE ${t} SET expires_at = now() - interval '2 hours' WHERE idempotency_key = 'moved'`,
      );
      const claim = tool.invoke({}, { key: 'moved' });
      await expect
        .poll(
          async () =>
            // This schema's claim only: another test's claim may be waiting at the same moment.
            (
              await backend.sql<{ n: number }>(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
                [`%${ledger.schema}%tool_ledger_claim%`],
              )
            )[0]?.n,
          { timeout: 10_000 },
        )
        .toBe(1);
      await mover.query('COMMIT');
      expect(await claim).toMatchObject({ outcome: 'executed', attempt: 1, value: 2 });
    } finally {
      await mover.end();
    }
    expect(runs).toBe(2);
    expect(await rowsOf(ledger, 'moved')).toHaveLength(1);
  });

  it('makes a missing partition in the claim when maintenance fell behind', async () => {
    const ledger = await backend.open(partitioned);
    // A TTL past every partition made at the start.
    const tool = ledger.tool({ name: 'far', kind: 'mutation', ttlSeconds: 30 * 86_400, handler: () => 'ok' });
    expect((await tool.invoke({}, { key: 'far' })).outcome).toBe('executed');
    const [row] = await rowsOf(ledger, 'far');
    expect(row?.part).toMatch(/tool_runs_p\d{8}t\d{6}/);
  });

  it('purges by dropping ended partitions, never one with a live lease, after the grace, and makes partitions ahead', async () => {
    const ledger = await backend.open(partitioned);
    await makePastPartitions(ledger.schema, 5);
    const tool = ledger.tool({ name: 'ping', kind: 'mutation', handler: () => 'done' });
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = ledger.tool({
      name: 'slow',
      kind: 'mutation',
      handler: async () => {
        await held;
        return 'slow done';
      },
    });
    for (const key of ['a', 'b']) await tool.call({}, { key });
    const running = slow.invoke({}, { key: 'c' });
    await expect.poll(async () => (await rowsOf(ledger, 'c')).length).toBe(1);
    await backend.sql(
      `UPDATE "${ledger.schema}".tool_runs SET expires_at = now() - interval '3 hours' WHERE idempotency_key IN ('a', 'b')`,
    );
    // A handler outlasting its TTL: its row expired hours ago, its lease is live.
    await backend.sql(
      `UPDATE "${ledger.schema}".tool_runs SET expires_at = now() - interval '4 hours' WHERE idempotency_key = 'c'`,
    );
    const partOf = async (key: string) => (await rowsOf(ledger, key))[0]?.part ?? '';
    const [partA, partC] = [await partOf('a'), await partOf('c')];

    expect(await ledger.purgeExpired({ graceSeconds: 6 * HOUR })).toBe(0);
    expect((await partitions(ledger.schema)).map((p) => `${ledger.schema}.${p.name}`)).toContain(partA);

    expect(await ledger.purgeExpired()).toBe(2);
    const names = (await partitions(ledger.schema)).map((p) => `${ledger.schema}.${p.name}`);
    expect(names).not.toContain(partA);
    expect(names).toContain(partC);
    expect(await rowsOf(ledger, 'c')).toHaveLength(1);

    release();
    expect((await running).outcome).toBe('executed');
    // Its completion moved it to a partition of now + TTL, so the old one is empty and goes.
    expect(await partOf('c')).not.toBe(partC);
    expect(await ledger.purgeExpired()).toBe(0);
    expect((await partitions(ledger.schema)).map((p) => `${ledger.schema}.${p.name}`)).not.toContain(partC);

    // Ahead: every expiry up to a TTL and two widths from now has its partition.
    const uppers = (await partitions(ledger.schema)).map((p) => /TO \('([^']+)'\)/.exec(p.bound)?.[1] ?? '');
    const latest = Math.max(...uppers.map((u) => new Date(u).getTime()));
    expect(latest).toBeGreaterThan(Date.now() + (86_400 + HOUR) * 1000);
  });
});

describe('the claim says where the row is', () => {
  // The hash a tool stores for the arguments `{}`, so a tool call replays what these claims wrote.
  const claimArgs = (key: string) => [
    'acme',
    'charge',
    key,
    null,
    parameterHash({}),
    'owner-1',
    30,
    HOUR,
    null,
    null,
    null,
    true,
    false,
  ];
  const claimAt = (schema: string) =>
    `SELECT claim, attempt, partition_key FROM "${schema}".tool_ledger_claim_at($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`;

  it("returns the row's exact expiry as its partition key, whatever the session's time zone and date style", async () => {
    const ledger = await backend.open(partitioned);
    const client = await connectOne();
    try {
      await client.query(`SET TimeZone = 'Asia/Kolkata'`);
      await client.query(`SET DateStyle = 'SQL, DMY'`);
      const check = async (claim: string) => {
        const { rows } = await client.query(claimAt(ledger.schema), claimArgs('located'));
        expect(rows[0]).toMatchObject({ claim });
        const key: string = rows[0].partition_key;
        expect(key).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
        const { rows: same } = await client.query(
          `SELECT expires_at = $1::timestamptz AS same FROM "${ledger.schema}".tool_runs WHERE idempotency_key = 'located'`,
          [key],
        );
        expect(same).toEqual([{ same: true }]);
      };
      await check('inserted');
      await check('existing');
      // A takeover moves the row to a new expiry (and partition): the key it returns is the new one.
      await makePastPartitions(ledger.schema, 1);
      await client.query(
        `UPDATE "${ledger.schema}".tool_runs SET expires_at = now() - interval '1 second',
           lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'located'`,
      );
      await check('taken');
    } finally {
      await client.end();
    }
  });

  it('keeps tool_ledger_claim() for a process of the previous version: its claim and by-key completion still work', async () => {
    const ledger = await backend.open(partitioned);
    const [claimed] = await backend.sql<Record<string, unknown>>(
      `SELECT * FROM "${ledger.schema}".tool_ledger_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      claimArgs('old-process'),
    );
    expect(claimed).toMatchObject({ claim: 'inserted', attempt: 1 });
    expect(claimed).not.toHaveProperty('partition_key');
    // The previous version's completion: by key, with no partition key.
    const done = await backend.sql(completeSql(ledger.schema), [
      'acme',
      'charge',
      'old-process',
      1,
      'owner-1',
      'succeeded',
      true,
      '"from the old process"',
      null,
      HOUR,
      'tool_ledger_unused',
    ]);
    expect(done).toHaveLength(1);
    const tool = ledger.tool({ name: 'charge', kind: 'mutation', handler: () => 'ran again' });
    expect(await tool.invoke({}, { key: 'old-process', tenant: 'acme' })).toMatchObject({
      outcome: 'replayed',
      value: 'from the old process',
    });
  });
});

describe('migration from the table layout', () => {
  it('attaches the old table as a legacy partition: old keys replay, new ones go on, ids continue', async () => {
    const schema = uniqueSchema();
    const table = await backend.open({ schema });
    let runs = 0;
    const before = table.tool({ name: 'charge', kind: 'mutation', handler: () => ++runs });
    for (const key of ['old-1', 'old-2', 'old-expired']) await before.call({}, { key });
    await backend.sql(
      `UPDATE "${schema}".tool_runs SET expires_at = now() - interval '1 minute' WHERE idempotency_key = 'old-expired'`,
    );
    await table.close();
    const [{ max } = { max: '0' }] = await backend.sql<{ max: string }>(
      `SELECT max(id)::text AS max FROM "${schema}".tool_runs`,
    );

    const ledger = await backend.open({ schema, ...partitioned });
    expect((await partitions(schema)).map((p) => p.name)).toContain('tool_runs_legacy');
    const after = ledger.tool({ name: 'charge', kind: 'mutation', handler: () => ++runs });
    expect(await after.invoke({}, { key: 'old-1' })).toMatchObject({ outcome: 'replayed', value: 1 });
    expect(await after.invoke({}, { key: 'old-2' })).toMatchObject({ outcome: 'replayed', value: 2 });
    expect(await after.invoke({}, { key: 'old-expired' })).toMatchObject({ outcome: 'executed', value: 4 });
    expect(await after.invoke({}, { key: 'new' })).toMatchObject({ outcome: 'executed', value: 5 });
    const [fresh] = await rowsOf(ledger, 'new');
    expect(BigInt(fresh?.id ?? 0)).toBeGreaterThan(BigInt(max));
    expect(await rowsOf(ledger, 'old-expired')).toHaveLength(1);
    const versions = await backend.sql<{ version: number }>(
      `SELECT version FROM "${schema}".tool_ledger_partitioned_migrations ORDER BY version`,
    );
    expect(versions.map((v) => v.version)).toEqual([1, 2, 3, 4]);
  });

  it('moves a schema converted with the (id, expires_at) key to the tenant-first key, keeping its rows', async () => {
    const ledger = await backend.open(partitioned);
    const { schema } = ledger;
    const before = ledger.tool({ name: 'charge', kind: 'mutation', handler: () => 'first' });
    await before.call({}, { key: 'kept' });
    await ledger.close();
    // The schema as partitioned migrations 1 and 2 left it before migration 3 existed.
    await backend.sql(`ALTER TABLE "${schema}".tool_runs DROP CONSTRAINT tool_runs_pkey`);
    await backend.sql(
      `ALTER TABLE "${schema}".tool_runs ADD CONSTRAINT tool_runs_pkey PRIMARY KEY (id, expires_at)`,
    );
    await backend.sql(`DELETE FROM "${schema}".tool_ledger_partitioned_migrations WHERE version = 3`);

    const reopened = await backend.open({ schema, ...partitioned });
    const [key] = await backend.sql<{ def: string }>(
      `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
       WHERE conrelid = to_regclass('"${schema}".tool_runs') AND contype = 'p'`,
    );
    expect(key?.def).toBe('PRIMARY KEY (tenant_id, id, expires_at)');
    const after = reopened.tool({ name: 'charge', kind: 'mutation', handler: () => 'second' });
    expect(await after.invoke({}, { key: 'kept' })).toMatchObject({ outcome: 'replayed', value: 'first' });
    expect(await after.invoke({}, { key: 'new' })).toMatchObject({ outcome: 'executed', value: 'second' });
  });

  it('brings a schema of partitioned migration 3 to 4: the claim that says where the row is, the old one kept', async () => {
    const ledger = await backend.open(partitioned);
    const { schema } = ledger;
    const before = ledger.tool({ name: 'charge', kind: 'mutation', handler: () => 'first' });
    await before.call({}, { key: 'kept' });
    await ledger.close();
    // As migration 3 left it: no tool_ledger_claim_at(), and tool_ledger_claim() a plpgsql function of its own
    // (here one that fails, so a claim that still went through it would show).
    const [{ replace } = { replace: '' }] = await backend.sql<{ replace: string }>(
      `SELECT format('CREATE OR REPLACE FUNCTION %s RETURNS %s LANGUAGE plpgsql AS $b$ BEGIN RAISE EXCEPTION %L; END $b$',
         p.oid::regprocedure, pg_get_function_result(p.oid), 'the body of migration 3') AS replace
       FROM pg_proc p WHERE p.oid = to_regproc($1)`,
      [`"${schema}".tool_ledger_claim`],
    );
    await backend.sql(replace);
    await backend.sql(`DROP FUNCTION "${schema}".tool_ledger_claim_at`);
    await backend.sql(`DELETE FROM "${schema}".tool_ledger_partitioned_migrations WHERE version = 4`);

    const reopened = await backend.open({ schema, ...partitioned });
    const languages = await backend.sql<{ name: string; language: string }>(
      `SELECT p.proname AS name, l.lanname AS language FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
       WHERE p.pronamespace = to_regnamespace($1) AND p.proname LIKE 'tool_ledger_claim%' ORDER BY 1`,
      [schema],
    );
    expect(languages).toEqual([
      { name: 'tool_ledger_claim', language: 'sql' },
      { name: 'tool_ledger_claim_at', language: 'plpgsql' },
    ]);
    const after = reopened.tool({ name: 'charge', kind: 'mutation', handler: () => 'second' });
    expect(await after.invoke({}, { key: 'kept' })).toMatchObject({ outcome: 'replayed', value: 'first' });
    expect(await after.invoke({}, { key: 'new' })).toMatchObject({ outcome: 'executed', value: 'second' });
  });

  it('drops the legacy partition whole once every row in it has expired', async () => {
    const schema = uniqueSchema();
    const table = await backend.open({ schema, ttlSeconds: 1 });
    const tool = table.tool({ name: 'ping', kind: 'mutation', handler: () => 1 });
    for (const key of ['a', 'b', 'c']) await tool.call({}, { key });
    await table.close();
    const ledger = await backend.open({
      schema,
      ttlSeconds: 1,
      layout: 'partitioned',
      partitionWidthSeconds: 1,
    });
    expect((await partitions(schema)).map((p) => p.name)).toContain('tool_runs_legacy');
    let dropped = 0;
    for (let i = 0; i < 5 && dropped < 3; i++) {
      await sleep(1000);
      dropped += await ledger.purgeExpired();
    }
    expect(dropped).toBe(3);
    expect((await partitions(schema)).map((p) => p.name)).not.toContain('tool_runs_legacy');
  });

  it('prints one script a DBA applies by hand, after which a ledger opens without migrating', async () => {
    const schema = uniqueSchema();
    const printer = await backend.open({ schema: uniqueSchema(), ...partitioned });
    const script = printer.migrationSql().replaceAll(printer.schema, schema);
    await backend.sql(script);
    await backend.sql(script); // idempotent
    const ledger = await backend.open({ schema, ...partitioned, migrate: false });
    const tool = ledger.tool({ name: 'ping', kind: 'mutation', handler: () => 'ok' });
    expect((await tool.invoke({}, { key: 'dba' })).outcome).toBe('executed');
  });
});

/**
 * The claim function's second look (`tool_ledger_claim_at()`, partitioned-sql.ts): a raw session, which takes no
 * advisory lock, commits a delete or a move of the key's row between the function's look-up and its claim of the
 * row found, or inside that claim.
 *
 * Why each sequence is deterministic: the raw session takes its lock before the claim starts; the test goes on
 * only once pg_locks shows the claim's backend waiting on that very lock, so the claim has done its look-up and is
 * parked in the statement after it; the raw session then changes the row and commits while the claim cannot move.
 * The polls only pace the checks: they order nothing.
 *
 * Two places to park the claim, two different answers:
 * - A SHARE lock on the table lets the look-up's ACCESS SHARE through and stops the found-row claim
 *   (`claimFoundSql`, narrowed to the expiry found) at its ROW EXCLUSIVE lock on `tool_runs`, which Postgres takes
 *   before the statement's snapshot. That snapshot sees the commit, so the statement finds no row and the function
 *   looks again: the path between the look-up and the claim.
 * - A row lock stops the `taken` CTE's UPDATE inside `claimFoundSql`, after its snapshot: the `existing` CTE has read
 *   the row already. A delete then leaves `taken` empty (read committed skips a deleted row), and the statement
 *   answers `existing` with `takeover_due`, which the function returns and the TypeScript claim loop judges raced
 *   and claims again. A move to another partition fails the UPDATE with 40001 ("tuple to be locked was already
 *   moved to another partition due to concurrent update"), which the function retries.
 */
describe('the claim function when its row moves or goes during the claim', () => {
  const ROW_EXCLUSIVE = { locktype: 'relation', mode: 'RowExclusiveLock' };
  const ROW_LOCK = { locktype: 'transactionid', mode: 'ShareLock' };
  const KEY_LOCK = { locktype: 'advisory', mode: 'ExclusiveLock' };

  /** What the claim in `schema` waits on, once it waits: at most 400 polls and 10 s, so a claim that never blocks fails the test. */
  async function claimWaiting(schema: string) {
    const deadline = Date.now() + 10_000;
    for (let poll = 0; poll < 400 && Date.now() < deadline; poll++) {
      const [waiting] = await backend.sql<{ locktype: string; mode: string; relation: string | null }>(
        `SELECT l.locktype, l.mode, l.relation::regclass::text AS relation
         FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE NOT l.granted AND a.query LIKE $1`,
        [`%${schema}%tool_ledger_claim_at(%`],
      );
      if (waiting) return waiting;
      await sleep(25);
    }
    throw new Error(`the claim in ${schema} never waited on a lock`);
  }

  /** Waits until the session `pid` waits on a lock, bounded as `claimWaiting`. */
  async function sessionWaiting(pid: number) {
    const deadline = Date.now() + 10_000;
    for (let poll = 0; poll < 400 && Date.now() < deadline; poll++) {
      const [waiting] = await backend.sql<{ locktype: string }>(
        'SELECT locktype FROM pg_locks WHERE pid = $1 AND NOT granted',
        [pid],
      );
      if (waiting) return waiting;
      await sleep(25);
    }
    throw new Error(`session ${pid} never waited on a lock`);
  }

  /** A key's completed run, expired two hours back: any claim of it is a takeover. */
  async function expiredRun(key: string) {
    const ledger = await backend.open(partitioned);
    await makePastPartitions(ledger.schema, 5);
    let runs = 0;
    const tool = ledger.tool({ name: 'charge', kind: 'mutation', handler: () => ++runs });
    await tool.call({}, { key });
    const t = `"${ledger.schema}".tool_runs`;
    await backend.sql(`UPDATE ${t} SET expires_at = now() - interval '2 hours' WHERE idempotency_key = $1`, [
      key,
    ]);
    const [row] = await rowsOf(ledger, key);
    const [args] = await backend.sql<{
      tenant: string;
      tool: string;
      user: string | null;
      hash: string;
      lock: number;
    }>(
      `SELECT tenant_id AS tenant, tool_name AS tool, user_id AS user, parameter_hash AS hash,
         hashtext($2 || chr(31) || tenant_id || chr(31) || tool_name || chr(31) || idempotency_key) AS lock
       FROM ${t} WHERE idempotency_key = $1`,
      [key, ledger.schema],
    );
    return { ledger, tool, t, key, row: row!, args: args!, runs: () => runs };
  }
  type Run = Awaited<ReturnType<typeof expiredRun>>;

  /** One call of the function itself, as the store makes it, so a test sees the function's own answer. */
  async function claimDirectly(run: Run) {
    const client = await connectOne();
    try {
      const { rows } = await client.query(
        `SELECT claim, status, attempt, takeover_due FROM "${run.ledger.schema}".tool_ledger_claim_at(
           $1, $2, $3, $4, $5, 'direct', 30, ${HOUR}, NULL, NULL, NULL, true, false)`,
        [run.args.tenant, run.args.tool, run.key, run.args.user, run.args.hash],
      );
      return rows;
    } finally {
      await client.end();
    }
  }

  /**
   * Runs `claim` while a raw session holds `lock`; once the claim waits on it (as `expected`), the raw session runs
   * `change` and commits, and the claim's answer is returned.
   */
  async function race<T>(
    run: Run,
    lock: string,
    expected: Record<string, unknown>,
    change: string,
    claim: () => Promise<T>,
  ): Promise<T> {
    const raw = await connectOne();
    try {
      await raw.query('BEGIN');
      await raw.query(lock);
      const claimed = claim();
      // Settled here too, so a failed wait below leaves no unhandled rejection behind.
      claimed.catch(() => {});
      expect(await claimWaiting(run.ledger.schema)).toMatchObject(expected);
      await raw.query(change);
      await raw.query('COMMIT');
      return await claimed;
    } finally {
      await raw.end();
    }
  }

  const tableLock = (run: Run) => `LOCK TABLE ${run.t} IN SHARE MODE`;
  const rowLock = (run: Run) => `SELECT 1 FROM ${run.t} WHERE idempotency_key = '${run.key}' FOR UPDATE`;
  const parkedBeforeClaim = (run: Run) => ({ ...ROW_EXCLUSIVE, relation: `${run.ledger.schema}.tool_runs` });
  const deleteRow = (run: Run) => `DELETE FROM ${run.t} WHERE idempotency_key = '${run.key}'`;
  // As a completion that outlasted its TTL moves its row forward.
  const moveForward = (run: Run) =>
    `UPDATE ${run.t} SET expires_at = now() + interval '1 hour' WHERE idempotency_key = '${run.key}'`;

  it('looks again when the row found is deleted before its claim, and inserts a fresh run in the same call', async () => {
    const run = await expiredRun('went');
    const answer = await race(run, tableLock(run), parkedBeforeClaim(run), deleteRow(run), () =>
      claimDirectly(run),
    );
    // The found-row claim never inserts: only the function's second look can.
    expect(answer).toMatchObject([{ claim: 'inserted', status: 'in_progress', attempt: 1 }]);
    const after = await rowsOf(run.ledger, 'went');
    expect(after).toHaveLength(1);
    expect(after[0]?.id).not.toBe(run.row.id);
  });

  it('runs the key afresh through the ledger when its row is deleted before the claim', async () => {
    const run = await expiredRun('went');
    const outcome = await race(run, tableLock(run), parkedBeforeClaim(run), deleteRow(run), () =>
      run.tool.invoke({}, { key: 'went' }),
    );
    expect(outcome).toMatchObject({ outcome: 'executed', attempt: 1, value: 2 });
    expect(run.runs()).toBe(2);
    const after = await rowsOf(run.ledger, 'went');
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ status: 'succeeded' });
    expect(after[0]?.id).not.toBe(run.row.id);
    expect(await run.tool.invoke({}, { key: 'went' })).toMatchObject({ outcome: 'replayed', value: 2 });
  });

  it('looks again when the row found moves to a live partition before its claim, and answers it as it stands', async () => {
    const run = await expiredRun('moved-on');
    const answer = await race(run, tableLock(run), parkedBeforeClaim(run), moveForward(run), () =>
      claimDirectly(run),
    );
    // Found again in its new partition, no longer expired: nothing to take over.
    expect(answer).toMatchObject([
      { claim: 'existing', status: 'succeeded', attempt: 1, takeover_due: false },
    ]);
  });

  it('replays through the ledger a completed row that moves to a live partition before the claim', async () => {
    const run = await expiredRun('moved-on');
    const outcome = await race(run, tableLock(run), parkedBeforeClaim(run), moveForward(run), () =>
      run.tool.invoke({}, { key: 'moved-on' }),
    );
    expect(outcome).toMatchObject({ outcome: 'replayed', value: 1 });
    expect(run.runs()).toBe(1);
    const after = await rowsOf(run.ledger, 'moved-on');
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: run.row.id, status: 'succeeded' });
    expect(after[0]?.part).not.toBe(run.row.part);
  });

  it('answers the old row as due for takeover when it is deleted while the takeover waits on its row lock', async () => {
    const run = await expiredRun('locked');
    const answer = await race(run, rowLock(run), ROW_LOCK, deleteRow(run), () => claimDirectly(run));
    // The function does not look again here: its statement read the row before the wait. The ledger's claim
    // loop reads `takeover_due` as a race and claims again (next test).
    expect(answer).toMatchObject([{ claim: 'existing', status: 'succeeded', takeover_due: true }]);
    expect(await rowsOf(run.ledger, 'locked')).toHaveLength(0);
  });

  it('runs the key afresh through the ledger when its row is deleted while the takeover waits on its row lock', async () => {
    const run = await expiredRun('locked');
    const outcome = await race(run, rowLock(run), ROW_LOCK, deleteRow(run), () =>
      run.tool.invoke({}, { key: 'locked' }),
    );
    expect(outcome).toMatchObject({ outcome: 'executed', attempt: 1, value: 2 });
    expect(run.runs()).toBe(2);
    const after = await rowsOf(run.ledger, 'locked');
    expect(after).toHaveLength(1);
    expect(after[0]?.id).not.toBe(run.row.id);
  });

  /**
   * The bound: the row moves to another partition during every one of the CLAIM_TRIES tries. Tries 1 to 4 wait on
   * the mover's uncommitted move (a row lock) and fail with 40001 when it commits. Between tries a gate session
   * holds the key's advisory lock: it queues for the lock behind the claim's try, the 40001 rolls the try back,
   * which releases the lock, and Postgres grants a released lock to the sessions already queued for it, so the
   * gate has it before the claim asks again. The mover starts the next move while the claim waits on the gate.
   * The last try ends either the same way (the function re-raises Postgres's 40001) or parked before its claim,
   * as above (the function raises its own error).
   */
  it.each([
    ['a move under its row lock', 'already moved to another partition'],
    ['a move before its claim', `the claimed row moved or went ${CLAIM_TRIES} times during its claim`],
  ])(
    'gives up after CLAIM_TRIES tries when the last ends with %s, with a retryable error that names no key',
    async (_last, text) => {
      const run = await expiredRun('restless-key');
      const lastBeforeClaim = text.includes('claimed row');
      const mover = await connectOne();
      const gate = await connectOne();
      const hours = (i: number) => (i % 2 === 0 ? 2 : 3);
      const move = (i: number) =>
        mover.query(
          `UPDATE ${run.t} SET expires_at = now() - make_interval(hours => ${hours(i)}) WHERE idempotency_key = '${run.key}'`,
        );
      try {
        const gatePid: number = (await gate.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        await mover.query('BEGIN');
        await move(1);
        const failed = rejection(run.tool.invoke({}, { key: run.key }));
        expect(await claimWaiting(run.ledger.schema)).toMatchObject(ROW_LOCK);
        for (let next = 2; next <= CLAIM_TRIES; next++) {
          const gated = gate.query('SELECT pg_advisory_lock($1, $2)', [KEY_LOCK_CLASS, run.args.lock]);
          expect(await sessionWaiting(gatePid)).toMatchObject({ locktype: 'advisory' });
          await mover.query('COMMIT');
          await gated;
          expect(await claimWaiting(run.ledger.schema)).toMatchObject(KEY_LOCK);
          await mover.query('BEGIN');
          const parkBeforeClaim = next === CLAIM_TRIES && lastBeforeClaim;
          if (parkBeforeClaim) await mover.query(tableLock(run));
          else await move(next);
          await gate.query('SELECT pg_advisory_unlock($1, $2)', [KEY_LOCK_CLASS, run.args.lock]);
          expect(await claimWaiting(run.ledger.schema)).toMatchObject(
            parkBeforeClaim ? parkedBeforeClaim(run) : ROW_LOCK,
          );
          if (parkBeforeClaim) await move(next);
        }
        await mover.query('COMMIT');
        const error = await failed;
        expect(error).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });
        expect(error.message).toContain(text);
        expect(error.message).toContain('Another session changed the same rows');
        expect(error.message).not.toContain(run.key);
        expect((error.cause as { code?: string } | undefined)?.code).toBe('40001');
      } finally {
        await mover.end();
        await gate.end();
      }
      expect(run.runs()).toBe(1);
      // Nothing of the tries stayed behind: the row is as the last move left it, and the next claim takes it over.
      expect(await rowsOf(run.ledger, run.key)).toMatchObject([
        { id: run.row.id, attempt: 1, status: 'succeeded' },
      ]);
      expect(await run.tool.invoke({}, { key: run.key })).toMatchObject({ outcome: 'executed', value: 2 });
    },
  );
});
