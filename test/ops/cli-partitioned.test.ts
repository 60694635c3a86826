import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { CLI_BIN, ensureBuiltCli } from './support/cli-build.js';

/** The built CLI's partitioned layout: `migrate --layout partitioned` (and its printed SQL) and `maintain`. */

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [CLI_BIN, ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl() },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const schemas: string[] = [];
const schema = () => {
  const s = uniqueSchema('cli_p');
  schemas.push(s);
  return s;
};

beforeAll(() => ensureBuiltCli());
afterAll(async () => {
  for (const s of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await pool.end();
});

describe('tool-ledger migrate --layout partitioned and maintain', () => {
  it('prints the partitioned script, which a DBA applies as it is', async () => {
    const s = schema();
    const printed = cli([
      'migrate',
      '--print-sql',
      '--layout',
      'partitioned',
      '--partition-width-seconds',
      '3600',
      '--schema',
      s,
    ]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/PARTITION BY RANGE \(expires_at\)/);
    await pool.query(printed.stdout);
    const [kind] = (
      await pool.query(`SELECT relkind::text FROM pg_class WHERE oid = to_regclass('"${s}".tool_runs')`)
    ).rows;
    expect(kind).toEqual({ relkind: 'p' });
  });

  it('converts a populated table-layout schema, then maintains and purges it, and refuses maintain on the table layout', async () => {
    const s = schema();
    const ledger = await createLedger({ connectionString: databaseUrl(), schema: s, telemetry: false });
    const tool = ledger.tool({ name: 'ping', kind: 'mutation', handler: () => 'pong' });
    for (const key of ['a', 'b']) await tool.call({}, { key });
    await ledger.close();

    const refused = cli(['maintain', '--schema', s]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/table layout/);

    const migrated = cli([
      'migrate',
      '--layout',
      'partitioned',
      '--partition-width-seconds',
      '3600',
      '--schema',
      s,
      '--json',
    ]);
    expect(migrated.code).toBe(0);
    expect(JSON.parse(migrated.stdout).applied).toEqual(['p1', 'p2', 'p3', 'p4']);
    // Run again without --layout: the schema says what it is, nothing is pending.
    const again = cli(['migrate', '--schema', s, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).applied).toEqual([]);

    const maintained = cli(['maintain', '--schema', s, '--ahead-seconds', '90000', '--json']);
    expect(maintained.code).toBe(0);
    const actions = JSON.parse(maintained.stdout).partitions as Array<{ action: string }>;
    expect(actions.every((a) => a.action === 'created')).toBe(true);

    // The row-by-row purge still takes expired rows of a partitioned table (which has no heap of its own to sweep).
    await pool.query(
      `UPDATE "${s}".tool_runs SET expires_at = now() - interval '1 minute' WHERE idempotency_key = 'b'`,
    );
    const purged = cli(['purge', '--expired', '--schema', s, '--json']);
    expect(purged.code).toBe(0);
    expect(JSON.parse(purged.stdout)).toMatchObject({ expired: 1, deleted: 1 });

    const reopened = await createLedger({
      connectionString: databaseUrl(),
      schema: s,
      telemetry: false,
      layout: 'partitioned',
      partitionWidthSeconds: 3600,
    });
    const after = reopened.tool({ name: 'ping', kind: 'mutation', handler: () => 'again' });
    expect((await after.invoke({}, { key: 'a' })).outcome).toBe('replayed');
    await reopened.close();
  });
});
