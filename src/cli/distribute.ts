import { ToolLedgerError } from '../contract/errors.js';
import { distributionScript } from '../ledger/citus-sql.js';
import { type Distribution, distributeLedger, PARTITIONED_NOT_DISTRIBUTABLE } from '../ledger/distribute.js';
import type { Driver } from '../ledger/driver.js';
import { CliError, EXIT, usageError } from './cli-error.js';

/**
 * `tool-ledger migrate --distribute`: after the migrations, distributes the schema by tenant with Citus
 * (src/ledger/distribute.ts), on the coordinator the connection names. Its own file, called from `migrate`.
 */

/** Refuses `--distribute` with the partitioned layout before anything connects. */
export function checkDistributeFlags(layout: string | undefined): void {
  if (layout === 'partitioned')
    throw usageError(`--distribute with --layout partitioned: ${PARTITIONED_NOT_DISTRIBUTABLE}.`);
}

/** What `--print-sql` adds: the distribution, after the migration script. */
export function distributionSqlForDba(schema: string): string {
  return `\n${distributionScript(schema)}`;
}

/** Distributes the migrated schema; a server without Citus, or a table placed otherwise, is a usage error. */
export async function distributeAfterMigrations(driver: Driver, schema: string): Promise<Distribution> {
  try {
    return await distributeLedger(driver, schema);
  } catch (error) {
    if (error instanceof ToolLedgerError && error.code === 'CONFIG_INVALID') {
      throw new CliError(error.message, EXIT.USAGE, { cause: error });
    }
    throw error;
  }
}

/** One line per table: where it is and whether this run put it there. */
export function describeDistribution(schema: string, distribution: Distribution): string {
  const lines = distribution.tables.map(
    (t) =>
      `  ${t.table}: ${t.placement === 'distributed' ? 'distributed by tenant_id' : 'reference table'}${t.action === 'kept' ? ' (already)' : ''}`,
  );
  return [`Schema "${schema}" is distributed with Citus ${distribution.citusVersion}:`, ...lines].join('\n');
}
