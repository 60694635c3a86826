// Migrations are applied statement by statement, split at a semicolon that ends a line (applyMigrations and
// migrationScript): a function body must not contain one, or the split would cut it in two.
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/ledger/migrations.js';

describe('each migration, split into its statements', () => {
  it.each(MIGRATIONS.map((m) => [m.version, m] as const))(
    'migration %i leaves every dollar-quoted body whole',
    (_version, migration) => {
      for (const statement of migration.up('some_schema').split(/;\n/)) {
        const tags = statement.match(/\$[A-Za-z_]*\$/g) ?? [];
        expect(tags.length % 2, statement).toBe(0);
      }
    },
  );

  it('migration 12 makes the two server functions, one statement each', () => {
    const twelve = MIGRATIONS.find((m) => m.version === 12);
    const statements = twelve?.up('s').split(/;\n/) ?? [];
    expect(statements.map((s) => /FUNCTION "s"\.(\w+)/.exec(s)?.[1])).toEqual([
      'tool_ledger_insert_run',
      'tool_ledger_complete_run',
    ]);
  });
});
