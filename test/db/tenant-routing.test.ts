import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationSql } from '../../src/index.js';
import * as sql from '../../src/ledger/sql.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';

/**
 * Citus routes a statement to one shard when every table it touches is filtered by a constant distribution
 * column. Citus does not run here, so the same property is shown on Postgres' own hash partitioning by
 * `tenant_id`: the plan of every hot-path statement, with its parameters, touches exactly one partition.
 */
const PARTITIONS = 4;
const admin = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
const plain = uniqueSchema('route_src');
const schema = uniqueSchema('route');

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
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.query(`DROP SCHEMA IF EXISTS "${plain}" CASCADE`);
  await admin.end();
});

/** The partitions a plan names, anywhere in it (scans, modify targets, subplans). */
function partitionsIn(plan: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(plan)) for (const p of plan) partitionsIn(p, found);
  else if (plan && typeof plan === 'object') {
    for (const [k, v] of Object.entries(plan)) {
      if (k === 'Relation Name' && typeof v === 'string' && /^tool_runs_p\d+$/.test(v)) found.add(v);
      else partitionsIn(v, found);
    }
  }
  return found;
}

/** The partition a tenant's rows land in, by Postgres' own tuple routing. */
async function partitionOf(tenant: string): Promise<string> {
  const client = await admin.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      `INSERT INTO ${sql.runsTable(schema)} (tenant_id, tool_name, idempotency_key, parameter_hash, status, expires_at)
       VALUES ($1, 'probe', 'probe', 'h', 'succeeded', now()) RETURNING tableoid::regclass::text AS part`,
      [tenant],
    );
    return String(rows[0].part).replace(/^.*\./, '');
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

async function plannedPartitions(text: string, params: unknown[]): Promise<Set<string>> {
  // An unnamed statement is planned with its parameters' values (a custom plan), as Citus' router planner sees them.
  const { rows } = await admin.query(`EXPLAIN (FORMAT JSON) ${text}`, params);
  return partitionsIn(rows[0]['QUERY PLAN']);
}

const claim: sql.ClaimFields = {
  tenant: 'acme',
  tool: 'create_invoice',
  key: 'k1',
  user: 'u1',
  paramsHash: 'h',
  leaseOwner: 'host:1:x:1',
  leaseSeconds: 30,
  ttlSeconds: 86400,
  traceId: undefined,
  spanId: undefined,
  jobId: 'job-1',
  allowLeaseTakeover: true,
  wouldWait: true,
};
const fence = ['acme', 'create_invoice', 'k1', 1, 'host:1:x:1'];

/** Every hot-path statement the ledger sends, with parameters as the store sends them. */
const HOT_PATH: Record<string, [text: string, params: unknown[]]> = {
  'the claim (and the replay read it is)': [sql.claimSql(schema), sql.claimParams(claim)],
  'the bare insert of a fresh key': [sql.insertRunSql(schema), sql.insertRunParams(claim)],
  'the fenced completion': [
    sql.completeSql(schema),
    [...fence, 'succeeded', false, '{"ok":true}', null, 86400, 'tool_ledger_chan'],
  ],
  'a lease renewal': [sql.renewLeaseSql(schema), [...fence, 30]],
  'a step started': [sql.startStepSql(schema), [...fence, 'charge', 'token']],
  'a step finished': [sql.finishStepSql(schema), [...fence, 'charge', 'succeeded', '"ch_1"', null]],
  'a refused reuse counted': [sql.recordConflictSql(schema), ['acme', 'create_invoice', 'k1']],
  'a job lookup': [sql.findJobSql(schema), ['acme', 'create_invoice', 'job-1']],
};

/**
 * Statements of sql.ts that are not a call's: maintenance that visits every tenant by design (Citus runs it on
 * every shard in parallel) and the per-deployment settings table (a Citus reference table).
 */
const NOT_ROUTED = new Set([
  'purgeExpiredBatchSql',
  'countExpiredSql',
  'readSettingSql',
  'insertSettingSql',
  'replaceSettingSql',
]);
const ROUTED = new Set([
  'claimSql',
  'insertRunSql',
  'completeSql',
  'renewLeaseSql',
  'startStepSql',
  'finishStepSql',
  'recordConflictSql',
  'findJobSql',
]);

describe('every hot-path statement routes by tenant', () => {
  it('classifies every statement of sql.ts, so a new one must be placed here', () => {
    const statements = Object.keys(sql).filter((name) => name.endsWith('Sql'));
    expect(statements.filter((name) => !ROUTED.has(name) && !NOT_ROUTED.has(name))).toEqual([]);
    expect(Object.keys(HOT_PATH)).toHaveLength(ROUTED.size);
  });

  it('spreads tenants over the partitions, so one partition in a plan is a choice and not the only one', async () => {
    const parts = new Set(
      await Promise.all(['acme', 'globex', 'initech', 'umbrella', 'hooli'].map(partitionOf)),
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
      if (/^INSERT/.test(text)) expect([...planned]).toEqual([]);
      else expect([...planned]).toEqual([own]);
    },
  );
});
