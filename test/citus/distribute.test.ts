import { beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger, migrationSql } from '../../src/index.js';
import { distributionScript } from '../../src/ledger/citus-sql.js';
import { MIGRATIONS } from '../../src/ledger/migrations.js';
import { ensureBuiltCli, runCli } from '../ops/support/cli-build.js';
import { databaseUrl, ownSchemas } from '../support/db.js';

/**
 * Distribution as a supported path, on the lane's Citus cluster: `createLedger({ distribute: true })`, `tool-ledger
 * migrate --distribute` and the script a DBA applies; idempotent; refusing what it cannot do; and a migration that
 * comes later running through the coordinator onto every shard.
 */
const { admin, fresh } = ownSchemas('citus_dist');

beforeAll(() => ensureBuiltCli());

/** Each table of the schema as Citus places it: `distributed by <column> (group <n>)`, `reference` or `local`. */
async function placements(schema: string): Promise<Record<string, string>> {
  const { rows } = await admin.query<{
    name: string;
    kind: string | null;
    column: string | null;
    group: number;
  }>(
    `SELECT c.relname AS name, t.citus_table_type AS kind, t.distribution_column AS column, t.colocation_id AS group
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     -- Per table of this schema (OFFSET 0 keeps the planner from joining the whole view): citus_tables names the
     -- distribution column of every table in the cluster, and one that another file drops meanwhile fails the
     -- lookup ("cache lookup failed for attribute").
     LEFT JOIN LATERAL (SELECT * FROM citus_tables WHERE table_name = c.oid OFFSET 0) t ON true
     WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY 1`,
    [schema],
  );
  const anchor = rows.find((r) => r.name === 'tool_runs')?.group;
  return Object.fromEntries(
    rows.map((r) => [
      r.name,
      r.kind === 'distributed'
        ? `distributed by ${r.column}${r.group === anchor ? ', colocated with tool_runs' : ''}`
        : (r.kind ?? 'local'),
    ]),
  );
}

const DISTRIBUTED = {
  tool_runs: 'distributed by tenant_id, colocated with tool_runs',
  tool_runs_forgotten: 'distributed by tenant_id, colocated with tool_runs',
  tool_runs_resolved: 'distributed by tenant_id, colocated with tool_runs',
  tool_ledger_settings: 'reference',
  tool_ledger_migrations: 'reference',
  // The audit chain (migration 11) stays a table of the coordinator: approvals are not supported on a distributed
  // schema, and forget and resolve, which append to it too, are not tested there (docs/operations.md).
  tool_ledger_audit: 'local',
};

/** Every migration's version, in order: what a fresh schema gets. */
const VERSIONS = MIGRATIONS.map((m) => m.version);

async function distributionSetting(schema: string): Promise<string | undefined> {
  const { rows } = await admin.query(
    `SELECT value FROM "${schema}".tool_ledger_settings WHERE name = 'distribution'`,
  );
  return rows[0]?.value;
}

/** One call and its replay, which fail on a distributed schema unless the ledger sends its Citus statements. */
async function callTwice(ledger: Ledger, tenant = 'acme'): Promise<string[]> {
  const tool = ledger.tool({ name: 'ping', kind: 'mutation', handler: () => ({ pong: tenant }) });
  const first = await tool.invoke({}, { tenant, key: 'k1' });
  const again = await tool.invoke({}, { tenant, key: 'k1' });
  return [first.outcome, again.outcome];
}

describe('distributing a ledger with Citus', () => {
  it('distributes at createLedger: run tables by tenant, colocated; settings and migrations as reference tables', async () => {
    const schema = fresh();
    const ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      distribute: true,
      telemetry: false,
    });
    try {
      expect(await placements(schema)).toEqual(DISTRIBUTED);
      expect(await distributionSetting(schema)).toBe('citus');
      expect(await callTwice(ledger)).toEqual(['executed', 'replayed']);
      expect(ledger.migrationSql()).toContain(distributionScript(schema));
    } finally {
      await ledger.close();
    }
  });

  it('is idempotent, and a ledger opened without distribute finds the distribution in the schema', async () => {
    const schema = fresh();
    await (
      await createLedger({ connectionString: databaseUrl(), schema, distribute: true, telemetry: false })
    ).close();
    // Many processes starting at once with distribute: true, under the migration lock.
    const again = await Promise.all(
      Array.from({ length: 3 }, () =>
        createLedger({
          connectionString: databaseUrl(),
          schema,
          distribute: true,
          telemetry: false,
          poolSize: 1,
        }),
      ),
    );
    await Promise.all(again.map((l) => l.close()));
    const r = runCli(['migrate', '--distribute', '--json', '--schema', schema], databaseUrl());
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      applied: unknown[];
      distribution: { tables: Array<{ action: string }> };
    };
    expect(out.applied).toEqual([]);
    expect(out.distribution.tables.map((t) => t.action)).toEqual(['kept', 'kept', 'kept', 'kept', 'kept']);
    expect(await placements(schema)).toEqual(DISTRIBUTED);

    const plain = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    try {
      expect(await callTwice(plain, 'globex')).toEqual(['executed', 'replayed']);
    } finally {
      await plain.close();
    }
  });

  it('distributes with tool-ledger migrate --distribute, saying where each table went', async () => {
    const schema = fresh();
    const r = runCli(['migrate', '--distribute', '--schema', schema], databaseUrl());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Applied migrations ${VERSIONS.join(', ')} to schema`);
    expect(r.stdout).toMatch(/is distributed with Citus \d+\.\d+/);
    expect(r.stdout).toContain('  tool_runs: distributed by tenant_id\n');
    expect(r.stdout).toContain('  tool_ledger_migrations: reference table');
    expect(await placements(schema)).toEqual(DISTRIBUTED);
  });

  it('distributes a ledger already in use: its runs move into the shards and replay', async () => {
    const schema = fresh();
    const before = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    const tenants = ['acme', 'globex', 'initech', 'umbrella'];
    try {
      const tool = before.tool({
        name: 'ping',
        kind: 'mutation',
        handler: (_: unknown, ctx) => ({ by: ctx.attempt }),
      });
      for (const tenant of tenants) await tool.call({}, { tenant, key: 'before' });
    } finally {
      await before.close();
    }
    const r = runCli(['migrate', '--distribute', '--schema', schema], databaseUrl());
    expect(r.code, r.stderr).toBe(0);
    expect(await placements(schema)).toEqual(DISTRIBUTED);
    const after = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    try {
      const tool = after.tool({ name: 'ping', kind: 'mutation', handler: () => ({ by: 'again' }) });
      for (const tenant of tenants) {
        expect(await tool.invoke({}, { tenant, key: 'before' })).toMatchObject({
          outcome: 'replayed',
          value: { by: 1 },
        });
      }
    } finally {
      await after.close();
    }
  });

  it('distributes by the script a DBA applies by hand (migrate --print-sql --distribute), twice without harm', async () => {
    const schema = fresh();
    const r = runCli(['migrate', '--print-sql', '--distribute', '--schema', schema], databaseUrl());
    expect(r.code, r.stderr).toBe(0);
    await admin.query(r.stdout);
    await admin.query(r.stdout);
    expect(await placements(schema)).toEqual(DISTRIBUTED);
    const ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      migrate: false,
      telemetry: false,
    });
    try {
      expect(await callTwice(ledger)).toEqual(['executed', 'replayed']);
    } finally {
      await ledger.close();
    }
  });

  it('says what to do when a schema was distributed by hand without the ledger, and migrate --distribute mends it', async () => {
    const schema = fresh();
    await admin.query(migrationSql(schema));
    await admin.query(`SELECT create_distributed_table('"${schema}".tool_runs', 'tenant_id')`);
    await admin.query(
      `SELECT create_distributed_table('"${schema}".tool_runs_forgotten', 'tenant_id', colocate_with => '"${schema}".tool_runs')`,
    );
    const unaware = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    try {
      const tool = unaware.tool({ name: 'ping', kind: 'mutation', handler: () => 'pong' });
      // The claim's insert routes, the completion does not: Citus refuses it, and the message says why and what to do.
      const error = await tool.call({}, { tenant: 'acme', key: 'k1' }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'LEDGER_UNAVAILABLE' });
      expect((error as Error).message).toMatch(
        /ran, but the database failed while saving its result \(non-IMMUTABLE functions are not allowed in CASE or COALESCE statements\)\. Citus refused a ledger statement.*tool-ledger migrate --distribute/s,
      );
      expect((error as Error).message).not.toMatch(/PostgreSQL 13 or later/);
    } finally {
      await unaware.close({ timeoutSeconds: 0.5 });
    }
    const r = runCli(['migrate', '--distribute', '--json', '--schema', schema], databaseUrl());
    expect(r.code, r.stderr).toBe(0);
    const { distribution } = JSON.parse(r.stdout) as {
      distribution: { tables: Array<{ table: string; action: string }> };
    };
    expect(distribution.tables.map((t) => `${t.table} ${t.action}`)).toEqual([
      'tool_runs kept',
      'tool_runs_forgotten kept',
      'tool_runs_resolved made',
      'tool_ledger_settings made',
      'tool_ledger_migrations made',
    ]);
    const mended = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    try {
      expect(await callTwice(mended, 'initech')).toEqual(['executed', 'replayed']);
    } finally {
      await mended.close();
    }
  });

  it('refuses a table Citus placed otherwise, says how to undo it, and changes nothing', async () => {
    const schema = fresh();
    await admin.query(migrationSql(schema));
    await admin.query(`SELECT create_reference_table('"${schema}".tool_runs_resolved')`);
    const error = await createLedger({
      connectionString: databaseUrl(),
      schema,
      distribute: true,
      telemetry: false,
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CONFIG_INVALID' });
    expect((error as Error).message).toMatch(
      /tool_runs_resolved is a reference table, but the ledger needs it distributed by tenant_id and colocated with tool_runs\. Undo that placement \(SELECT undistribute_table/,
    );
    // One transaction: the tables it would have distributed before the refusal are not distributed either.
    expect((await placements(schema)).tool_runs).toBe('local');
  });

  it('refuses the partitioned layout at distribute time, saying why', async () => {
    const schema = fresh();
    await (
      await createLedger({
        connectionString: databaseUrl(),
        schema,
        layout: 'partitioned',
        partitionWidthSeconds: 3600,
        telemetry: false,
      })
    ).close();
    const r = runCli(['migrate', '--distribute', '--schema', schema], databaseUrl());
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /partitioned layout cannot be distributed with Citus: its claim is a PL\/pgSQL function/,
    );
    expect((await placements(schema)).tool_runs).toBe('local');
  });

  it('runs a later migration through the coordinator onto every shard', async () => {
    const schema = fresh();
    await (
      await createLedger({ connectionString: databaseUrl(), schema, distribute: true, telemetry: false })
    ).close();
    // Migrations 5 and 6 (drop an index, drop two CHECK constraints) are idempotent: put back what they remove,
    // as DDL Citus passes on to every shard, and forget them, so the next start applies them as it would a new one.
    const t = `"${schema}".tool_runs`;
    await admin.query(
      `CREATE INDEX tool_runs_in_progress_idx ON ${t} (lease_expires_at) WHERE status = 'in_progress'`,
    );
    await admin.query(`ALTER TABLE ${t} ADD CONSTRAINT tool_runs_attempt_check CHECK (attempt >= 1)`);
    await admin.query(`DELETE FROM "${schema}".tool_ledger_migrations WHERE version IN (5, 6)`);
    const onShards = async (command: string) =>
      (
        await admin.query<{ result: string }>(
          `SELECT result FROM run_command_on_shards($1::regclass, $2::text)`,
          [t, command],
        )
      ).rows.map((r) => Number(r.result));
    const indexes = `SELECT count(*) FROM pg_index WHERE indrelid = '%s'::regclass`;
    const checks = `SELECT count(*) FROM pg_constraint WHERE conrelid = '%s'::regclass AND contype = 'c'`;
    const before = { indexes: await onShards(indexes), checks: await onShards(checks) };
    expect(new Set(before.checks)).toEqual(new Set([1]));

    const ledger = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    try {
      const { rows } = await admin.query(`SELECT version FROM "${schema}".tool_ledger_migrations ORDER BY 1`);
      expect(rows.map((r) => r.version)).toEqual(VERSIONS);
      const after = { indexes: await onShards(indexes), checks: await onShards(checks) };
      expect(after.indexes).toEqual(before.indexes.map((n) => n - 1));
      expect(new Set(after.checks)).toEqual(new Set([0]));
      expect(await callTwice(ledger)).toEqual(['executed', 'replayed']);
    } finally {
      await ledger.close();
    }
  });
});
