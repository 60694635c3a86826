// `tool-ledger migrate --check` reads which versions of the ledger's code hold connections (their
// application_name) and the schema's applied migrations, and says whether the pending ones are safe: exit 0 when
// they are, 1 when a connected process could not run past a pending breaking migration. The older process here is
// a connection named as a ledger written for schema level 7 would be, on a schema stopped at migration 7.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { LATEST_VERSION, MIGRATIONS, migrationPreludeSql } from '../../src/ledger/migrations.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';

const ROOT = join(import.meta.dirname, '../..');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const current = uniqueSchema('check_now');
const old = uniqueSchema('check_old');

afterAll(async () => {
  for (const schema of [current, old]) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

function check(schema: string): { code: number | null; report: Record<string, unknown>; text: string } {
  const run = (json: boolean) =>
    spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'src/cli/main.ts'),
        'migrate',
        '--check',
        '--schema',
        schema,
        ...(json ? ['--json'] : []),
      ],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl() }, encoding: 'utf8', timeout: 60_000 },
    );
  const json = run(true);
  const text = run(false);
  return {
    code: json.status,
    report: JSON.parse(json.stdout) as Record<string, unknown>,
    text: text.stdout + text.stderr,
  };
}

describe('migrate --check', () => {
  it('says a current schema with current processes connected is compatible (exit 0)', async () => {
    const ledger = await createLedger({ connectionString: databaseUrl(), schema: current });
    try {
      await ledger.tool({ name: 'noop', kind: 'mutation', handler: async () => 1 }).invoke({}, { key: 'k' });
      const { code, report, text } = check(current);
      expect(code).toBe(0);
      expect(report).toMatchObject({ pending: [], compatible: true, incompatible: [] });
      expect(report.processes).toEqual([{ version: LATEST_VERSION, connections: expect.any(Number) }]);
      expect(text).toMatch(
        /is up to date.*\n.*code for schema level \d+.*\n(.*\n)?Compatible: safe to migrate/,
      );
    } finally {
      await ledger.close();
    }
  });

  it('refuses (exit 1) while a process older than a pending breaking migration is connected, and says which', async () => {
    const tx = await pool.connect();
    try {
      await tx.query('BEGIN');
      for (const statement of migrationPreludeSql(old)) await tx.query(statement);
      for (const migration of MIGRATIONS.filter((m) => m.version <= 7)) {
        for (const statement of migration.up(old).split(/;\n/))
          if (statement.trim()) await tx.query(statement);
        await tx.query(`INSERT INTO "${old}".tool_ledger_migrations (version, name) VALUES ($1, $2)`, [
          migration.version,
          migration.name,
        ]);
      }
      await tx.query('COMMIT');
    } finally {
      tx.release();
    }
    const older = new pg.Client({
      connectionString: databaseUrl(),
      application_name: `tool-ledger v7 ${old}`,
    });
    await older.connect();
    try {
      const { code, report, text } = check(old);
      expect(code).toBe(1);
      expect(report).toMatchObject({ breakingPending: [8], compatible: false });
      expect(report.incompatible).toEqual([
        { version: 7, why: expect.stringMatching(/migration 8 .* would break it/) },
      ]);
      expect(text).toMatch(/pending migrations 8(, \d+)+ \(breaking: 8\)/);
      expect(text).toMatch(/Not safe to migrate now/);
    } finally {
      await older.end();
    }
    // With the old process gone, the same pending migrations are safe.
    const after = check(old);
    expect(after.code).toBe(0);
    expect(after.report).toMatchObject({ breakingPending: [8], compatible: true });
  });
});
