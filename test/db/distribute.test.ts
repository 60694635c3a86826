import { beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { ensureBuiltCli, runCli } from '../ops/support/cli-build.js';
import { databaseUrl, ownSchemas } from '../support/db.js';

/**
 * Distribution asked of a server without Citus (every lane but the Citus one): refused with a typed error that says
 * what to do, and the CLI's `--distribute` likewise, as a usage error. The Citus lane shows the rest
 * (test/citus/distribute.test.ts).
 */
const { admin, fresh } = ownSchemas('nodist');

beforeAll(() => ensureBuiltCli());

describe('distribute on a server without Citus', () => {
  it('fails createLedger with CONFIG_INVALID saying what a Citus coordinator needs, and distributes nothing', async () => {
    const schema = fresh();
    const error = await createLedger({
      connectionString: databaseUrl(),
      schema,
      distribute: true,
      telemetry: false,
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CONFIG_INVALID', retryable: false });
    expect((error as Error).message).toMatch(
      /Cannot distribute schema "nodist_\w+": this server has no Citus extension\. Connect to a Citus coordinator/,
    );
    // The migrations ran (they come first); no distribution was recorded.
    const { rows } = await admin.query(
      `SELECT name FROM "${schema}".tool_ledger_settings WHERE name = 'distribution'`,
    );
    expect(rows).toEqual([]);
  });

  it('refuses tool-ledger migrate --distribute as a usage error, after migrating', async () => {
    const schema = fresh();
    const r = runCli(['migrate', '--distribute', '--schema', schema], databaseUrl());
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/this server has no Citus extension/);
  });

  it('refuses --distribute with --layout partitioned before connecting, saying why', () => {
    const r = runCli(
      ['migrate', '--distribute', '--layout', 'partitioned'],
      'postgres://nobody@127.0.0.1:1/x',
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /partitioned layout cannot be distributed with Citus: its claim is a PL\/pgSQL function/,
    );
  });

  it('prints the distribution after the migration script for a DBA', () => {
    const r = runCli(['migrate', '--print-sql', '--distribute', '--schema', 'billing'], 'postgres://unused');
    expect(r.code).toBe(0);
    const distribution = r.stdout.slice(r.stdout.indexOf('-- Distribute schema billing'));
    expect(r.stdout.indexOf('-- Distribute schema billing')).toBeGreaterThan(
      r.stdout.indexOf('CREATE TABLE'),
    );
    expect(distribution).toContain(`create_distributed_table('"billing"."tool_runs"', 'tenant_id')`);
    expect(distribution).toContain(
      `create_distributed_table('"billing"."tool_runs_resolved"', 'tenant_id', colocate_with => '"billing"."tool_runs"')`,
    );
    expect(distribution).toContain(`create_reference_table('"billing"."tool_ledger_settings"')`);
    expect(distribution).toContain("VALUES ('distribution', 'citus')");
  });
});
