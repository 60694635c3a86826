import type { Driver } from './driver.js';
import { ledgerUnavailable } from './driver-errors.js';
import { MIGRATIONS, migrationPreludeSql, versionTable } from './migrations.js';

/**
 * Applies pending migrations in one transaction under an advisory lock, so many processes starting at once
 * apply each migration exactly once and the losers simply find it done.
 * Returns the versions applied by this call.
 */
export async function applyMigrations(driver: Driver, schema: string): Promise<number[]> {
  try {
    return await driver.transaction(async (tx) => {
      for (const statement of migrationPreludeSql(schema)) await tx.query(statement);
      const { rows } = await tx.query<{ version: number }>(`SELECT version FROM ${versionTable(schema)}`);
      const done = new Set(rows.map((r) => Number(r.version)));
      const applied: number[] = [];
      for (const migration of MIGRATIONS) {
        if (done.has(migration.version)) continue;
        for (const statement of migration.up(schema).split(/;\n/)) {
          if (statement.trim()) await tx.query(statement);
        }
        await tx.query(`INSERT INTO ${versionTable(schema)} (version, name) VALUES ($1, $2)`, [
          migration.version,
          migration.name,
        ]);
        applied.push(migration.version);
      }
      return applied;
    });
  } catch (error) {
    throw ledgerUnavailable(error, `apply migrations to schema "${schema}"`);
  }
}
