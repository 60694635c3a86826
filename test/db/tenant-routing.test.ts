import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationSql } from '../../src/index.js';
import { partitionedMigrationScript } from '../../src/ledger/partitioned.js';
import * as claimSql from '../../src/ledger/sql/claim.js';
import * as claimFields from '../../src/ledger/sql/claim-fields.js';
import * as names from '../../src/ledger/sql/names.js';
import * as purgeSql from '../../src/ledger/sql/purge.js';
import * as runsSql from '../../src/ledger/sql/runs.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { SAMPLE_CLAIM, SAMPLE_FENCE } from '../support/sample-claim.js';

/** Every statement of src/ledger/sql/, by name. */
const sql = { ...names, ...claimFields, ...claimSql, ...runsSql, ...purgeSql };

/**
 * Citus routes a statement to one shard when every table it touches is filtered by a constant distribution
 * column. Citus does not run here, so the same property is shown on Postgres' own hash partitioning by
 * `tenant_id`: the plan of every hot-path statement, with its parameters, touches exactly one partition. The
 * partitioned layout (range by expiry) is shown the same way with every range partition hash-partitioned by
 * tenant, as Citus shards each partition of a distributed partitioned table.
 */
const PARTITIONS = 4;
const admin = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
const plain = uniqueSchema('route_src');
const schema = uniqueSchema('route');
const partitionedSource = uniqueSchema('route_psrc');
const byExpiry = uniqueSchema('route_p');
/** Range partitions of the partitioned model: expired rows and live ones, each split by tenant. */
const RANGES = ['past', 'live'] as const;

beforeAll(async () => {
  // The ledger's own layout, migrated to the latest version, is the model the partitioned copy is made from.
  await admin.query(migrationSql(plain));
  await admin.query(`CREATE SCHEMA "${schema}"`);
  const t = sql.runsTable(schema);
  // Identity and constraints as the ledger's (INCLUDING ALL), partitioned by the column Citus distributes by.
  await admin.query(
    `CREATE TABLE ${t} (LIKE ${sql.runsTable(plain)} INCLUDING ALL) PARTITION BY HASH (tenant_id)`,
  );
  for (let i = 0; i < PARTITIONS; i++) {
    await admin.query(
      `CREATE TABLE "${schema}".tool_runs_p${i} PARTITION OF ${t} FOR VALUES WITH (MODULUS ${PARTITIONS}, REMAINDER ${i})`,
    );
  }
});

afterAll(async () => {
  for (const name of [schema, plain, byExpiry, partitionedSource]) {
    await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  }
  await admin.end();
});

/** The partitions a plan names, anywhere in it (scans, modify targets, subplans). */
function partitionsIn(plan: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(plan)) for (const p of plan) partitionsIn(p, found);
  else if (plan && typeof plan === 'object') {
    for (const [k, v] of Object.entries(plan)) {
      if (k === 'Relation Name' && typeof v === 'string' && /^tool_runs_(p|r_\w+_h)\d+$/.test(v))
        found.add(v);
      else partitionsIn(v, found);
    }
  }
  return found;
}

/** The partition a tenant's rows land in, by Postgres' own tuple routing. */
async function partitionOf(tenant: string, into = schema): Promise<string> {
  const client = await admin.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      `INSERT INTO ${sql.runsTable(into)} (tenant_id, tool_name, idempotency_key, parameter_hash, status, expires_at)
       VALUES ($1, 'probe', 'probe', 'h', 'succeeded', now() + interval '1 hour') RETURNING tableoid::regclass::text AS part`,
      [tenant],
    );
    return String(rows[0].part).replace(/^.*\./, '');
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

/** The unique indexes (the primary key among them) of the tables that hold a tenant's rows, as `table: columns`. */
async function uniqueKeys(of: string): Promise<string[]> {
  const { rows } = await admin.query(
    `SELECT c.relname AS table, string_agg(a.attname, ', ' ORDER BY k.n) AS columns
     FROM pg_index i
     JOIN pg_class c ON c.oid = i.indrelid
     JOIN pg_namespace s ON s.oid = c.relnamespace
     CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
     JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
     WHERE s.nspname = $1 AND i.indisunique AND c.relname IN ('tool_runs', 'tool_runs_forgotten', 'tool_runs_resolved')
     GROUP BY c.relname, i.indexrelid ORDER BY 1`,
    [of],
  );
  return rows.map((r) => `${r.table}: ${r.columns}`);
}

async function plannedPartitions(text: string, params: unknown[]): Promise<Set<string>> {
  // An unnamed statement is planned with its parameters' values (a custom plan), as Citus' router planner sees them.
  const { rows } = await admin.query(`EXPLAIN (FORMAT JSON) ${text}`, params);
  return partitionsIn(rows[0]['QUERY PLAN']);
}

const claim = SAMPLE_CLAIM;
const fence = SAMPLE_FENCE;

type Statement = [text: string, params: unknown[]];

/** The fenced writes of a call, by key; the partitioned layout sends them with the row's partition key first. */
const fencedWrites = (on: string, scope: runsSql.FenceScope = 'key'): Record<string, Statement> => {
  const partitionKey = scope === 'partition' ? ['2999-01-01T00:00:00.000000Z'] : [];
  return {
    'the fenced completion': [
      sql.completeSql(on, scope),
      [...fence, 'succeeded', false, '{"ok":true}', null, 86400, 'tool_ledger_chan', ...partitionKey],
    ],
    'a lease renewal': [sql.renewLeaseSql(on, scope), [...fence, 30, ...partitionKey]],
    'a step started': [sql.startStepSql(on, scope), [...fence, 'charge', 'token', ...partitionKey]],
    'a step finished': [
      sql.finishStepSql(on, scope),
      [...fence, 'charge', 'succeeded', '"ch_1"', null, ...partitionKey],
    ],
  };
};

/** The statements of a call that follow the claim, the same in both layouts. */
const afterClaim = (on: string): Record<string, Statement> => ({
  ...fencedWrites(on),
  'a refused reuse counted': [sql.recordConflictSql(on), ['acme', 'create_invoice', 'k1']],
  'a job lookup': [sql.findJobSql(on), ['acme', 'create_invoice', 'job-1']],
});

/** A statement that only inserts: its plan names no partition (see below). */
const insertsOnly = (text: string) => /^(WITH inserted AS \(\s*)?INSERT\b/.test(text);

/**
 * The claim's two halves, which the partitioned layout's claim function runs (the found one narrowed to the
 * found row's expiry, a plpgsql variable there and a constant of the live range here).
 */
const FOUND_EXPIRY = `'2999-01-01T00:00:00Z'::timestamptz`;
const claimHalves = (on: string): Record<string, Statement> => ({
  "the claim's look-up of the key (and the replay read it starts)": [
    sql.claimLookupSql(on),
    sql.claimParams(claim).slice(0, 3),
  ],
  // Its placeholders are the fresh run's, the first eleven of the claim's.
  "the claim's insert of a fresh key": [sql.claimFreshSql(on), sql.insertRunParams(claim)],
  'the claim of the row found': [
    sql.claimFoundSql(on, (alias) => `${alias}.expires_at = ${FOUND_EXPIRY}`),
    sql.claimParams(claim),
  ],
});

/** Every hot-path statement the ledger sends, with parameters as the store sends them. */
const HOT_PATH: Record<string, Statement> = {
  'the claim (and the replay read it is)': [sql.claimSql(schema), sql.claimParams(claim)],
  'the bare insert of a fresh key': [sql.insertRunSql(schema), sql.insertRunParams(claim)],
  "Citus's claim of a key's row (test/citus/routing.test.ts plans it on Citus itself)": [
    sql.claimExistingSql(schema),
    sql.claimParams(claim),
  ],
  "Citus's read of a key's row before its claim": [sql.claimReadSql(schema), sql.claimReadParams(claim)],
  ...claimHalves(schema),
  ...afterClaim(schema),
};

/**
 * The partitioned layout's: its claim is `tool_ledger_claim()`, whose plan EXPLAIN cannot open, so the statements
 * the function runs under its lock are planned instead, with the same parameters: the look-up of the key (every
 * range), then one of the two halves (the found one in the found row's range only). It has no bare insert.
 */
const PARTITIONED_HOT_PATH: Record<string, Statement> = {
  ...claimHalves(byExpiry),
  ...afterClaim(byExpiry),
};

/**
 * Statements of src/ledger/sql/ that are not a call's: maintenance that visits every tenant by design (Citus runs it on
 * every shard in parallel) and the per-deployment settings table (a Citus reference table).
 */
const NOT_ROUTED = new Set([
  'purgeExpiredBatchSql',
  'purgeStartSql',
  'purgeWindowPlanSql',
  'purgeWindowSql',
  'countExpiredSql',
  'readSettingSql',
  'insertSettingSql',
  'replaceSettingSql',
]);
const ROUTED = new Set([
  'claimSql',
  'claimExistingSql',
  'claimReadSql',
  'claimFreshSql',
  'claimFoundSql',
  'claimLookupSql',
  'insertRunSql',
  'completeSql',
  'renewLeaseSql',
  'startStepSql',
  'finishStepSql',
  'recordConflictSql',
  'findJobSql',
]);

describe('every hot-path statement routes by tenant', () => {
  it('classifies every statement of src/ledger/sql/, so a new one must be placed here', () => {
    const statements = Object.keys(sql).filter((name) => name.endsWith('Sql'));
    expect(statements.filter((name) => !ROUTED.has(name) && !NOT_ROUTED.has(name))).toEqual([]);
    expect(Object.keys(HOT_PATH)).toHaveLength(ROUTED.size);
  });

  it('spreads tenants over the partitions, so one partition in a plan is a choice and not the only one', async () => {
    const parts = new Set(
      await Promise.all(
        ['acme', 'globex', 'initech', 'umbrella', 'hooli'].map((tenant) => partitionOf(tenant)),
      ),
    );
    expect(parts.size).toBeGreaterThan(1);
  });

  it('finds every partition in the plan of a write by id, which is what the check is there to catch', async () => {
    const byId = await plannedPartitions(
      `UPDATE ${sql.runsTable(schema)} SET attempt = attempt + 1 WHERE id = $1::bigint`,
      [1],
    );
    expect(byId.size).toBe(PARTITIONS);
  });

  it.each(Object.entries(HOT_PATH))(
    "%s touches exactly the tenant's one partition",
    async (_what, [text, params]) => {
      const own = await partitionOf('acme');
      const planned = await plannedPartitions(text, params);
      // An INSERT's plan names no partition: tuple routing places the row by its tenant at run time, so it touches
      // only that one. Every statement that reads or updates rows names exactly the tenant's.
      if (insertsOnly(text)) expect([...planned]).toEqual([]);
      else expect([...planned]).toEqual([own]);
    },
  );
});

describe('the partitioned layout routes by tenant too', () => {
  beforeAll(async () => {
    await admin.query(partitionedMigrationScript(partitionedSource, 3600));
    await admin.query(`CREATE SCHEMA "${byExpiry}"`);
    const t = sql.runsTable(byExpiry);
    await admin.query(
      `CREATE TABLE ${t} (LIKE ${sql.runsTable(partitionedSource)} INCLUDING ALL) PARTITION BY RANGE (expires_at)`,
    );
    const bounds = { past: ['MINVALUE', 'now()'], live: ['now()', 'MAXVALUE'] } as const;
    for (const range of RANGES) {
      const [from, to] = bounds[range];
      await admin.query(
        `CREATE TABLE "${byExpiry}".tool_runs_r_${range} PARTITION OF ${t} FOR VALUES FROM (${from}) TO (${to}) PARTITION BY HASH (tenant_id)`,
      );
      for (let i = 0; i < PARTITIONS; i++) {
        await admin.query(
          `CREATE TABLE "${byExpiry}".tool_runs_r_${range}_h${i} PARTITION OF "${byExpiry}".tool_runs_r_${range} FOR VALUES WITH (MODULUS ${PARTITIONS}, REMAINDER ${i})`,
        );
      }
    }
  });

  it('has the tenant first in every unique key, in both layouts (Citus refuses any other)', async () => {
    for (const of of [plain, partitionedSource]) {
      const keys = await uniqueKeys(of);
      expect(keys.length).toBeGreaterThanOrEqual(3);
      for (const key of keys) expect(key).toMatch(/^\w+: tenant_id\b/);
    }
    expect(await uniqueKeys(partitionedSource)).toContain('tool_runs: tenant_id, id, expires_at');
  });

  it('finds every sub-partition in the plan of a write by id, which is what the check is there to catch', async () => {
    const byId = await plannedPartitions(
      `UPDATE ${sql.runsTable(byExpiry)} SET attempt = attempt + 1 WHERE id = $1::bigint`,
      [1],
    );
    expect(byId.size).toBe(RANGES.length * PARTITIONS);
  });

  it.each(Object.entries(PARTITIONED_HOT_PATH))(
    "%s touches only the tenant's sub-partition of each range",
    async (_what, [text, params]) => {
      // A key says nothing of its expiry, so every range partition is read; within each, only the tenant's part.
      const own = (await partitionOf('acme', byExpiry)).replace(/^tool_runs_r_\w+?_/, '');
      const planned = [...(await plannedPartitions(text, params))].sort();
      if (insertsOnly(text)) return expect(planned).toEqual([]);
      expect(planned.length).toBeGreaterThan(0);
      expect(planned.length).toBeLessThanOrEqual(RANGES.length);
      for (const part of planned)
        expect(part).toMatch(new RegExp(`^tool_runs_r_(${RANGES.join('|')})_${own}$`));
    },
  );

  it.each(Object.entries(fencedWrites(byExpiry, 'partition')))(
    "%s with the row's partition key touches only the tenant's sub-partition of that one range",
    async (_what, [text, params]) => {
      // The probe row of partitionOf expires within the hour, in the live range, as does this partition key.
      const own = await partitionOf('acme', byExpiry);
      expect([...(await plannedPartitions(text, params))]).toEqual([own]);
    },
  );
});
