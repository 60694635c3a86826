import { ToolLedgerError } from '../contract/errors.js';
import type { Queryable } from '../contract/types.js';
import { CITUS_DISTRIBUTION, DISTRIBUTION_SETTING } from './citus-sql.js';
import type { Driver } from './driver.js';
import { classifyDriverError, ledgerUnavailable } from './driver-errors.js';
import { applyMigrations } from './migrate.js';
import { migrationPreludeSql, migrationScript, quoteLiteral } from './migrations.js';
import {
  claimFunctionSql,
  convertToPartitionedSql,
  ensurePartitionsFunctionSql,
  LAYOUT_SETTING,
  legacyClaimFunctionSql,
  maintainFunctionSql,
  PARTITION_WIDTH_SETTING,
  partitionedVersionTable,
  tenantFirstKeySql,
} from './partitioned-sql.js';
import { readSettingSql } from './sql/names.js';

/** How the ledger table is laid out: one table (the default), or range partitions by expiry. */
export const LAYOUTS = ['table', 'partitioned'] as const;
export type Layout = (typeof LAYOUTS)[number];

/**
 * The partitioned layout's own migrations, recorded in their own table (`tool_ledger_partitioned_migrations`), so
 * the table layout's list (migrations.ts) stays as it is. Each is a list of statements run one by one, since
 * function bodies hold semicolons. They run after the table layout's migrations have brought `tool_runs` to its
 * current columns: step 1 turns that table, fresh or populated, into the partitioned one.
 *
 * A later table-layout migration that changes `tool_runs` needs a partitioned counterpart here: once a schema is
 * partitioned, the table layout's migrations no longer run on it (see `applyLayoutMigrations`).
 */
export interface PartitionedMigration {
  readonly version: number;
  readonly name: string;
  readonly up: (schema: string, widthSeconds: number) => readonly string[];
}

export const PARTITIONED_MIGRATIONS: readonly PartitionedMigration[] = [
  {
    version: 1,
    name: 'tool_runs_partitioned',
    up: (schema, width) => [convertToPartitionedSql(schema, width)],
  },
  {
    version: 2,
    name: 'tool_runs_partition_functions',
    up: (schema, width) => [
      ensurePartitionsFunctionSql(schema),
      // Migration 2 made tool_ledger_claim() itself; since 4 it calls the one that also says where the row is.
      claimFunctionSql(schema),
      legacyClaimFunctionSql(schema),
      maintainFunctionSql(schema),
      // The first partitions, so the first claims need not make them; a ledger's start makes the rest of its TTL's.
      `SELECT count(*) FROM ${quoteIdentSchema(schema)}.tool_ledger_ensure_partitions(now(), now() + make_interval(secs => ${2 * width}))`,
    ],
  },
  {
    version: 3,
    name: 'tool_runs_tenant_first_key',
    up: (schema) => [tenantFirstKeySql(schema)],
  },
  {
    // The claim looks the key up once, then reads and writes only the partition it found it in, instead of one
    // statement reading every partition four times, and returns the row's partition key for the fenced writes
    // (tool_ledger_claim_at). tool_ledger_claim() keeps its columns for processes of the previous version.
    version: 4,
    name: 'tool_runs_claim_reads_once',
    up: (schema) => [claimFunctionSql(schema), legacyClaimFunctionSql(schema)],
  },
];

function quoteIdentSchema(schema: string): string {
  return `"${schema.replaceAll('"', '""')}"`;
}

/** What a schema says of its layout: the settings row, absent for the table layout and for an empty schema. */
export interface StoredLayout {
  readonly layout: Layout;
  readonly widthSeconds: number | undefined;
  /** Distributed by tenant with Citus (see distribute.ts): the store sends its Citus statements (citus-sql.ts). */
  readonly distributed: boolean;
}

/**
 * The schema's layout, or undefined when this database user may not read the settings table (a role granted only
 * the ledger table): then nothing is checked, as before the layout existed.
 */
export async function readStoredLayout(db: Queryable, schema: string): Promise<StoredLayout | undefined> {
  try {
    const read = async (name: string) =>
      (await db.query<{ value: string }>(readSettingSql(schema), [name])).rows[0]?.value;
    const layout = await read(LAYOUT_SETTING);
    const distributed = (await read(DISTRIBUTION_SETTING)) === CITUS_DISTRIBUTION;
    if (layout !== 'partitioned') return { layout: 'table', widthSeconds: undefined, distributed };
    const width = Number(await read(PARTITION_WIDTH_SETTING));
    return { layout: 'partitioned', widthSeconds: Number.isFinite(width) ? width : undefined, distributed };
  } catch (error) {
    const condition = classifyDriverError(error).condition;
    if (condition === 'undefined_table')
      return { layout: 'table', widthSeconds: undefined, distributed: false };
    if (condition === 'insufficient_privilege') return undefined;
    throw ledgerUnavailable(error, `read the layout of schema "${schema}"`);
  }
}

/**
 * Refuses a ledger opened with another layout than its schema holds: the table layout's statements fail on a
 * partitioned table (no unique key index), and the partitioned claim needs the functions the migration makes.
 */
export function checkLayout(
  stored: StoredLayout | undefined,
  wanted: { readonly layout: Layout; readonly widthSeconds: number },
  schema: string,
  migrate: boolean,
): void {
  if (stored === undefined) return;
  if (stored.layout === 'partitioned' && wanted.layout === 'table') {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `Schema "${schema}" holds the partitioned layout (partitions of ${stored.widthSeconds} s), but this ledger was opened with layout: 'table'. Open it with layout: 'partitioned' and partitionWidthSeconds: ${stored.widthSeconds}.`,
    );
  }
  if (stored.layout === 'table' && wanted.layout === 'partitioned' && !migrate) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `Schema "${schema}" holds the table layout (or nothing yet), but this ledger was opened with layout: 'partitioned' and migrate: false. Convert it first with \`tool-ledger migrate --layout partitioned --schema ${schema}\` (or apply ledger.migrationSql() as a DBA), or open it with layout: 'table'.`,
    );
  }
  if (
    stored.layout === 'partitioned' &&
    wanted.layout === 'partitioned' &&
    stored.widthSeconds !== wanted.widthSeconds
  ) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `Schema "${schema}" is partitioned in ${stored.widthSeconds} s partitions, but this ledger was opened with partitionWidthSeconds: ${wanted.widthSeconds}. Open it with partitionWidthSeconds: ${stored.widthSeconds}; the width is fixed when the layout is made.`,
    );
  }
}

/**
 * Brings a schema to the wanted layout: the table layout's migrations while the table is not partitioned yet,
 * then, for the partitioned layout, its own ones, in one transaction under the migration lock. Returns the
 * versions applied, the partitioned ones as `p1`, `p2`.
 */
export async function applyLayoutMigrations(
  driver: Driver,
  schema: string,
  wanted: { readonly layout: Layout; readonly widthSeconds: number },
): Promise<string[]> {
  const stored = await readStoredLayout(driver, schema);
  const applied: string[] = [];
  if (stored?.layout !== 'partitioned') {
    for (const version of await applyMigrations(driver, schema)) applied.push(String(version));
  }
  if (wanted.layout === 'table') return applied;
  try {
    await driver.transaction(async (tx) => {
      for (const statement of migrationPreludeSql(schema)) await tx.query(statement);
      await tx.query(partitionedPreludeSql(schema));
      const { rows } = await tx.query<{ version: number }>(
        `SELECT version FROM ${partitionedVersionTable(schema)}`,
      );
      const done = new Set(rows.map((r) => Number(r.version)));
      for (const migration of PARTITIONED_MIGRATIONS) {
        if (done.has(migration.version)) continue;
        for (const statement of migration.up(schema, wanted.widthSeconds)) await tx.query(statement);
        await tx.query(`INSERT INTO ${partitionedVersionTable(schema)} (version, name) VALUES ($1, $2)`, [
          migration.version,
          migration.name,
        ]);
        applied.push(`p${migration.version}`);
      }
    });
  } catch (error) {
    throw ledgerUnavailable(error, `apply the partitioned layout to schema "${schema}"`);
  }
  return applied;
}

function partitionedPreludeSql(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${partitionedVersionTable(schema)} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
}

/**
 * The partitioned layout's script for a DBA (`tool-ledger migrate --layout partitioned --print-sql`): the table
 * layout's script, then the partitioned steps, each skipped when recorded. Idempotent like the table script.
 */
export function partitionedMigrationScript(schema: string, widthSeconds: number): string {
  const parts = [migrationScript(schema), 'BEGIN;', ...migrationPreludeSql(schema).map((s) => `${s};`)];
  parts.push(`${partitionedPreludeSql(schema)};`);
  const table = partitionedVersionTable(schema);
  for (const migration of PARTITIONED_MIGRATIONS) {
    parts.push(
      `-- partitioned ${migration.version}: ${migration.name}`,
      `DO $tool_ledger_p$ BEGIN
IF NOT EXISTS (SELECT 1 FROM ${table} WHERE version = ${migration.version}) THEN
${migration
  .up(schema, widthSeconds)
  .map((s) => `  EXECUTE ${quoteLiteral(s)};`)
  .join('\n')}
  INSERT INTO ${table} (version, name) VALUES (${migration.version}, ${quoteLiteral(migration.name)});
END IF;
END $tool_ledger_p$;`,
    );
  }
  parts.push('COMMIT;');
  return parts.join('\n');
}
