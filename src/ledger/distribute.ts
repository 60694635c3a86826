import { ToolLedgerError } from '../contract/errors.js';
import type { Queryable } from '../contract/types.js';
import {
  citusVersionSql,
  DISTRIBUTED_TABLES,
  DISTRIBUTION_COLUMN,
  distributeTableSql,
  REFERENCE_TABLES,
  recordDistributionSql,
  referenceTableSql,
  tablePlacementSql,
  truncateLocalDataSql,
} from './citus-sql.js';
import { ledgerUnavailable } from './driver-errors.js';
import { migrationLockSql } from './migrations.js';
import { quoteIdent } from './sql/names.js';

/**
 * Distributing a ledger by tenant with Citus (`createLedger({ distribute: true })`, `tool-ledger migrate
 * --distribute`), on the coordinator, after the migrations: the run tables by `tenant_id`, colocated, so a run and
 * its audit records share a shard; the settings and the migration record as reference tables; then the setting
 * the store reads at start to send its Citus statements (citus-sql.ts). Idempotent: a table placed as it should
 * be is kept, one placed otherwise is refused, not moved.
 */

/** Where a table went, and whether this call put it there (`made`) or found it there (`kept`). */
export interface PlacedTable {
  readonly table: string;
  readonly placement: 'distributed' | 'reference';
  readonly action: 'made' | 'kept';
}

export interface Distribution {
  readonly citusVersion: string;
  readonly tables: readonly PlacedTable[];
}

/** Why the partitioned layout is not distributed: said at distribute time and in docs/operations.md. */
export const PARTITIONED_NOT_DISTRIBUTABLE =
  "The partitioned layout cannot be distributed with Citus: its claim is a PL/pgSQL function that takes the key's lock and plans its statements once for every tenant (a generic plan), and Citus routes a statement to a shard only when it sees the tenant's value, so every claim fails. Distribute a schema of the table layout (layout: 'table', the default), whose purge deletes expired rows shard by shard";

interface Placement {
  readonly name: string;
  readonly method: string | null;
  readonly replication: string | null;
  readonly colocation: number | null;
  readonly column_name: string | null;
  readonly partitioned: boolean;
}

/** Runs the distribution in one transaction under the schema's migration lock (see the module comment). */
export async function distributeLedger(
  db: Queryable & { transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> },
  schema: string,
): Promise<Distribution> {
  const citusVersion = await installedCitus(db, schema);
  try {
    const tables = await db.transaction(async (tx) => {
      await tx.query(migrationLockSql(schema));
      const { rows } = await tx.query<Placement>(tablePlacementSql(), [
        schema,
        [...DISTRIBUTED_TABLES, ...REFERENCE_TABLES],
      ]);
      const found = new Map(rows.map((row) => [row.name, row]));
      const placed: PlacedTable[] = [];
      const [first] = DISTRIBUTED_TABLES;
      for (const table of DISTRIBUTED_TABLES) {
        const row = present(found, table, schema);
        if (row.partitioned) throw new ToolLedgerError('CONFIG_INVALID', `${PARTITIONED_NOT_DISTRIBUTABLE}.`);
        if (row.method === null) {
          const colocateWith = table === first ? 'default' : qualified(schema, first);
          await tx.query(distributeTableSql(), [qualified(schema, table), colocateWith]);
          await tx.query(truncateLocalDataSql(), [qualified(schema, table)]);
          placed.push({ table, placement: 'distributed', action: 'made' });
          continue;
        }
        const anchor = found.get(first)!;
        if (
          row.method !== 'h' ||
          row.column_name !== DISTRIBUTION_COLUMN ||
          row.colocation !== anchor.colocation
        ) {
          throw misplaced(
            schema,
            table,
            row,
            `distributed by ${DISTRIBUTION_COLUMN} and colocated with ${first}`,
          );
        }
        placed.push({ table, placement: 'distributed', action: 'kept' });
      }
      for (const table of REFERENCE_TABLES) {
        const row = present(found, table, schema);
        if (row.method === null) {
          await tx.query(referenceTableSql(), [qualified(schema, table)]);
          await tx.query(truncateLocalDataSql(), [qualified(schema, table)]);
          placed.push({ table, placement: 'reference', action: 'made' });
          continue;
        }
        if (row.method !== 'n' || row.replication !== 't')
          throw misplaced(schema, table, row, 'a reference table');
        placed.push({ table, placement: 'reference', action: 'kept' });
      }
      await tx.query(recordDistributionSql(schema));
      return placed;
    });
    return { citusVersion, tables };
  } catch (error) {
    if (error instanceof ToolLedgerError) throw error;
    throw ledgerUnavailable(error, `distribute schema "${schema}" with Citus`);
  }
}

const qualified = (schema: string, table: string) => `${quoteIdent(schema)}.${quoteIdent(table)}`;

/** The installed Citus version; a server without it is refused, since nothing could be distributed there. */
async function installedCitus(db: Queryable, schema: string): Promise<string> {
  let version: string | undefined;
  try {
    version = (await db.query<{ version: string }>(citusVersionSql())).rows[0]?.version;
  } catch (error) {
    throw ledgerUnavailable(error, `check for Citus before distributing schema "${schema}"`);
  }
  if (version === undefined) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `Cannot distribute schema "${schema}": this server has no Citus extension. Connect to a Citus coordinator (CREATE EXTENSION citus there, and citus_add_node() for each worker), or leave distribute off on a single Postgres.`,
    );
  }
  return version;
}

function present(found: ReadonlyMap<string, Placement>, table: string, schema: string): Placement {
  const row = found.get(table);
  if (row === undefined) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `Cannot distribute schema "${schema}": it has no table ${table}. Apply the migrations first (createLedger with migrate: true, or tool-ledger migrate), then distribute.`,
    );
  }
  return row;
}

function misplaced(schema: string, table: string, row: Placement, wanted: string): ToolLedgerError {
  const now =
    row.method === 'h'
      ? `distributed by ${row.column_name} in colocation group ${row.colocation}`
      : row.replication === 't'
        ? 'a reference table'
        : `a Citus table of kind ${row.method}`;
  return new ToolLedgerError(
    'CONFIG_INVALID',
    `Cannot distribute schema "${schema}": ${table} is ${now}, but the ledger needs it ${wanted}. Undo that placement (SELECT undistribute_table('${qualified(schema, table)}')) and distribute again; nothing was changed.`,
  );
}
