import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import * as citus from '../../src/ledger/citus-sql.js';
import * as claimSql from '../../src/ledger/sql/claim.js';
import * as claimFields from '../../src/ledger/sql/claim-fields.js';
import * as names from '../../src/ledger/sql/names.js';
import * as purgeSql from '../../src/ledger/sql/purge.js';
import * as runsSql from '../../src/ledger/sql/runs.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { SAMPLE_CLAIM, SAMPLE_FENCE } from '../support/sample-claim.js';
import { placementOf, type TenantPlacement } from './support.js';

/** Every statement of src/ledger/sql/, by name. */
const sql = { ...names, ...claimFields, ...claimSql, ...runsSql, ...purgeSql };

/**
 * Every statement a call sends to a distributed ledger reaches one shard: planned by Citus itself on the lane's
 * cluster, each plan is one task, on the worker that holds the tenant's shard, reading and writing that shard's
 * table only, and Citus says it made a router plan. Planned both as the store first sends them (unnamed, with
 * their parameters) and as a named prepared statement after its sixth execution, when Postgres may switch to a
 * generic plan that does not know the tenant.
 */
const schema = uniqueSchema('citus_route');
const client = new pg.Client({ connectionString: databaseUrl() });
const notices: string[] = [];
let acme: TenantPlacement;
let shardCount = 0;
/** statement → worker port and task count, for the routing table printed at the end. */
const table: Array<[string, string]> = [];

const claim = SAMPLE_CLAIM;
const fence = SAMPLE_FENCE;

type Statement = [text: string, params: unknown[]];

/** What the store sends on a distributed schema in a call, with its parameters (see `statements()` in store.ts). */
const HOT_PATH: Record<string, Statement> = {
  "the read of a key's row (a replay, when it is decisive)": [
    sql.claimReadSql(schema),
    sql.claimReadParams(claim),
  ],
  'the claim of a row to take over or wait on': [sql.claimExistingSql(schema), sql.claimParams(claim)],
  'the insert of a fresh key': [sql.insertRunSql(schema), sql.insertRunParams(claim)],
  'the fenced completion': [
    citus.citusCompleteSql(schema),
    [...fence, 'succeeded', false, '{"ok":true}', null],
  ],
  'the fenced completion of a run that outlasted its TTL': [
    citus.citusLateCompleteSql(schema),
    [...fence, 'succeeded', false, '{"ok":true}', null, 86400],
  ],
  'a lease renewal': [sql.renewLeaseSql(schema, 'key'), [...fence, 30]],
  'a step started': [sql.startStepSql(schema, 'key'), [...fence, 'charge', 'token']],
  'a step finished': [citus.citusFinishStepSql(schema), [...fence, 'charge', 'succeeded', '"ch_1"', null]],
  'a refused reuse counted': [sql.recordConflictSql(schema), ['acme', 'create_invoice', 'k1']],
  'a job lookup': [sql.findJobSql(schema), ['acme', 'create_invoice', 'job-1']],
};

/** citus-sql.ts's statements, placed: a call's (above), the coordinator's own, and the administrator's. */
const CALL = new Set(['citusCompleteSql', 'citusLateCompleteSql', 'citusFinishStepSql']);
/** The notice to waiters: a function call on the coordinator, which touches no table. */
const COORDINATOR = new Set(['notifySql']);
/** Distribution and the purge, which visit every shard (or none) by design. */
const ADMIN = new Set([
  'citusVersionSql',
  'tablePlacementSql',
  'distributeTableSql',
  'referenceTableSql',
  'truncateLocalDataSql',
  'recordDistributionSql',
  'purgeShardsSql',
]);

beforeAll(async () => {
  await (
    await createLedger({ connectionString: databaseUrl(), schema, distribute: true, telemetry: false })
  ).close();
  await client.connect();
  client.on('notice', (notice) => notices.push(notice.message ?? ''));
  acme = await placementOf(client, schema, 'acme');
  shardCount = Number(
    (
      await client.query(`SELECT count(*) AS n FROM citus_shards WHERE table_name = $1::regclass`, [
        `"${schema}".tool_runs`,
      ])
    ).rows[0].n,
  );
});

afterAll(async () => {
  if (table.length > 0) {
    const lines = table.map(([what, where]) => `| ${what} | ${where} |`);
    process.stdout.write(
      `\nRouting on Citus (${shardCount} shards, tenant acme on shard ${acme.shardId}, worker port ${acme.port}):\n| statement | plan |\n|---|---|\n${lines.join('\n')}\n`,
    );
  }
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

interface Job {
  readonly taskCount: number;
  readonly nodes: string[];
  readonly relations: Set<string>;
}

/** The distributed part of a Citus plan: its task count, the nodes of its tasks and the tables their plans name. */
function jobOf(explained: unknown): Job | undefined {
  const plan = (explained as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan;
  const job = findKey(plan, 'Job') as
    | { 'Task Count': number; Tasks: Array<{ Node: string; 'Remote Plan': unknown }> }
    | undefined;
  if (!job) return undefined;
  const relations = new Set<string>();
  for (const task of job.Tasks) collect(task['Remote Plan'], 'Relation Name', relations);
  return { taskCount: job['Task Count'], nodes: job.Tasks.map((t) => t.Node), relations };
}

function findKey(value: unknown, key: string): unknown {
  if (Array.isArray(value)) {
    for (const v of value) {
      const found = findKey(v, key);
      if (found !== undefined) return found;
    }
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === key) return v;
      const found = findKey(v, key);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

function collect(value: unknown, key: string, into: Set<string>): void {
  if (Array.isArray(value)) for (const v of value) collect(v, key, into);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === key && typeof v === 'string') into.add(v);
      else collect(v, key, into);
    }
  }
}

async function explain(
  text: string,
  params: unknown[] = [],
): Promise<{ job: Job | undefined; said: string[] }> {
  notices.length = 0;
  await client.query('SET client_min_messages TO debug2');
  try {
    const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${text}`, params);
    return { job: jobOf(rows[0]['QUERY PLAN']), said: [...notices] };
  } finally {
    await client.query('RESET client_min_messages');
  }
}

/** A parameter as a literal for EXECUTE. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return `'${String(value).replaceAll("'", "''")}'`;
}

function expectOneShard(job: Job | undefined, said: string[]): void {
  expect(job?.taskCount).toBe(1);
  expect(job?.nodes).toEqual([expect.stringContaining(`port=${acme.port} `)]);
  // The tenant's shard, and nothing else: every table the remote plan reads or writes.
  expect([...(job?.relations ?? [])]).toEqual([acme.shardTable]);
  expect(said).toContain('Creating router plan');
}

describe('on a Citus cluster, every statement of a call reaches one shard', () => {
  it('places every statement of citus-sql.ts, so a new one must be placed here', () => {
    const statements = Object.keys(citus).filter(
      (name) => name.endsWith('Sql') && name !== 'distributionScript',
    );
    expect(
      statements.filter((name) => !CALL.has(name) && !COORDINATOR.has(name) && !ADMIN.has(name)),
    ).toEqual([]);
  });

  it('has shards on both workers, so one shard in a plan is a choice and not the only one', async () => {
    const ports = new Set<number>();
    for (const tenant of ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark'])
      ports.add((await placementOf(client, schema, tenant)).port);
    expect(ports.size).toBe(2);
  });

  it('plans a write by id on every shard, which is what the check is there to catch', async () => {
    const { job } = await explain(
      `UPDATE ${sql.runsTable(schema)} SET attempt = attempt + 1 WHERE id = $1::bigint`,
      [1],
    );
    expect(job?.taskCount).toBe(shardCount);
    expect(shardCount).toBeGreaterThan(1);
  });

  it.each(Object.entries(HOT_PATH))(
    "%s is one task, a router plan on the tenant's shard",
    async (what, [text, params]) => {
      const { job, said } = await explain(text, params);
      expectOneShard(job, said);
      table.push([what, `${job?.taskCount} task, ${acme.shardTable} on port ${acme.port}, router plan`]);
    },
  );

  it.each(Object.entries(HOT_PATH))(
    '%s stays on one shard as a named prepared statement after its sixth execution',
    async (_what, [text, params]) => {
      const name = `route_${Math.random().toString(36).slice(2, 10)}`;
      await client.query(`PREPARE ${name} AS ${text}`);
      try {
        const execute = `EXECUTE ${name}(${params.map(literal).join(', ')})`;
        let last: Job | undefined;
        for (let i = 0; i < 7; i++) last = (await explain(execute)).job;
        expect(last?.taskCount).toBe(1);
        expect([...(last?.relations ?? [])]).toEqual([acme.shardTable]);
      } finally {
        await client.query(`DEALLOCATE ${name}`);
      }
    },
  );

  it('sends the notice to waiters on the coordinator, where they listen: no shard, no task', async () => {
    const { job } = await explain(citus.notifySql(), ['tool_ledger_chan', '1']);
    expect(job).toBeUndefined();
    table.push(['the notice to waiters (only when one registered)', 'the coordinator, no shard']);
  });
});
