import pg from 'pg';
import type { Distribution } from '../../ledger/distribute.js';
import type { PgPoolLike } from '../../ledger/drivers/pg/client.js';
import { pgDriver } from '../../ledger/drivers/pg/pg-driver.js';
import { pgConnectOptions } from '../../ledger/drivers/pg-connect.js';
import { checkFleet, type FleetReport } from '../../ledger/fleet.js';
import { applyMigrations } from '../../ledger/migrate.js';
import { LATEST_VERSION, migrationScript } from '../../ledger/migrations.js';
import {
  applyLayoutMigrations,
  type Layout,
  partitionedMigrationScript,
  readStoredLayout,
} from '../../ledger/partitioned.js';
import { loadDeploymentSecret } from '../../ledger/settings.js';
import { connectionOf, positiveInt } from '../args.js';
import { CliError, EXIT, maskDatabaseUrl, usageError } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, resolveConnection } from '../db.js';
import {
  checkDistributeFlags,
  describeDistribution,
  distributeAfterMigrations,
  distributionSqlForDba,
} from '../distribute.js';
import { type Io, print } from '../io.js';

export const name = 'migrate';

export const options = {
  'print-sql': { type: 'boolean', default: false },
  layout: { type: 'string' },
  'partition-width-seconds': { type: 'string' },
  distribute: { type: 'boolean', default: false },
  check: { type: 'boolean', default: false },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage:
        'migrate [--print-sql | --check] [--layout table|partitioned] [--partition-width-seconds N] [--distribute]',
      text: [
        'Apply pending migrations (or print the SQL for a DBA);',
        '--layout partitioned converts tool_runs to partitions',
        'by expiry (default width 86400 s); --distribute then',
        'distributes the schema by tenant on a Citus coordinator;',
        '--check says whether pending migrations are safe with the',
        'processes connected (exit 1 when not)',
      ],
    },
  ],
  examples: [
    'DATABASE_URL=postgres://app@db:5432/app tool-ledger migrate',
    'tool-ledger migrate --print-sql --schema billing_ledger > ledger.sql',
    'tool-ledger migrate --distribute',
    'tool-ledger migrate --check   # are the pending migrations safe with the running fleet? (exit 1: no)',
  ],
};

export function parse(args: Args, io: Io): MigrateOptions {
  const schema = args.str('schema') ?? 'tool_ledger';
  if (args.flag('print-sql')) {
    // Validates the schema name without needing a database.
    resolveConnection({ 'database-url': 'postgres://unused', schema }, io.env);
  }
  const layout = args.str('layout');
  if (layout !== undefined && layout !== 'table' && layout !== 'partitioned') {
    throw usageError(`--layout must be table or partitioned, got ${JSON.stringify(layout)}.`);
  }
  if (args.str('partition-width-seconds') !== undefined && layout !== 'partitioned') {
    throw usageError('--partition-width-seconds goes with --layout partitioned.');
  }
  if (args.flag('distribute')) checkDistributeFlags(layout);
  return {
    distribute: args.flag('distribute'),
    check: args.flag('check'),
    printSql: args.flag('print-sql'),
    json: args.json,
    schema,
    connection: () => connectionOf(args, io),
    layout:
      layout === undefined
        ? undefined
        : {
            layout,
            widthSeconds: positiveInt(
              '--partition-width-seconds',
              args.str('partition-width-seconds'),
              86_400,
            ),
          },
  };
}

export interface MigrateOptions {
  printSql: boolean;
  json: boolean;
  schema: string;
  connection: () => Connection;
  /** Undefined: the table layout, unless the schema is partitioned already (then its own migrations). */
  layout?: { readonly layout: Layout; readonly widthSeconds: number } | undefined;
  /** Then distribute the schema with Citus (src/cli/distribute.ts). */
  distribute?: boolean;
  /** Apply nothing: say whether the pending migrations are safe with the processes connected (src/ledger/fleet.ts). */
  check?: boolean;
}

export async function run(io: Io, opts: MigrateOptions): Promise<number> {
  if (opts.printSql) {
    io.out(
      opts.layout?.layout === 'partitioned'
        ? partitionedMigrationScript(opts.schema, opts.layout.widthSeconds)
        : migrationScript(opts.schema) + (opts.distribute ? distributionSqlForDba(opts.schema) : ''),
    );
    return EXIT.OK;
  }
  const connection = opts.connection();
  const pool = new pg.Pool({ ...pgConnectOptions(pg.Client, connection.databaseUrl, 10_000), max: 1 });
  pool.on('error', () => {});
  if (opts.check) return runCheck(io, opts, pool as unknown as PgPoolLike, connection.schema);
  const driver = pgDriver(pool as unknown as PgPoolLike, {
    ownsPool: true,
    preparedStatements: true,
    // A migration may wait on another process's advisory lock; the CLI user can interrupt it.
    answerTimeoutMs: 0,
  });
  let applied: Array<number | string>;
  let distribution: Distribution | undefined;
  try {
    const stored = await readStoredLayout(driver, connection.schema);
    if (stored?.layout === 'partitioned' && opts.layout?.layout === 'table') {
      throw new CliError(
        `Schema "${connection.schema}" holds the partitioned layout; it does not convert back. Run migrate without --layout (or with --layout partitioned).`,
        EXIT.USAGE,
      );
    }
    const wanted =
      opts.layout ??
      (stored?.layout === 'partitioned'
        ? { layout: 'partitioned' as const, widthSeconds: stored.widthSeconds ?? 86_400 }
        : undefined);
    applied = wanted
      ? await applyLayoutMigrations(driver, connection.schema, wanted)
      : await applyMigrations(driver, connection.schema);
    if (opts.distribute) distribution = await distributeAfterMigrations(driver, connection.schema);
    // Made here too, so a deployment whose application role may only read the settings table has its secret.
    await loadDeploymentSecret(driver, connection.schema);
  } catch (error) {
    if (error instanceof CliError) throw error;
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : '';
    throw new CliError(
      `Migration of schema "${connection.schema}" on ${maskDatabaseUrl(connection.databaseUrl)} failed: ${
        error instanceof Error ? error.message : String(error)
      }${cause ? ` (${cause})` : ''}`,
      EXIT.FAILURE,
      { cause: error },
    );
  } finally {
    await driver.close().catch(() => {});
  }
  print(io, opts.json, { schema: connection.schema, applied, version: LATEST_VERSION, distribution }, () =>
    [
      applied.length === 0
        ? `Schema "${connection.schema}" is up to date (version ${LATEST_VERSION}).`
        : `Applied migration${applied.length > 1 ? 's' : ''} ${applied.join(', ')} to schema "${connection.schema}" (now at version ${LATEST_VERSION}).`,
      ...(distribution ? [describeDistribution(connection.schema, distribution)] : []),
    ].join('\n'),
  );
  return EXIT.OK;
}

/** `migrate --check`: applies nothing; says whether the pending migrations are safe with the processes connected. */
async function runCheck(io: Io, opts: MigrateOptions, pool: PgPoolLike, schema: string): Promise<number> {
  let report: FleetReport;
  try {
    report = await checkFleet(pool, schema);
  } catch (error) {
    throw new CliError(
      `migrate --check could not read the database: ${(error as Error).message}`,
      EXIT.FAILURE,
      {
        cause: error,
      },
    );
  } finally {
    await pool.end().catch(() => {});
  }
  print(io, opts.json, report, () => {
    const lines = [
      report.pending.length === 0
        ? `Schema "${schema}" is up to date (version ${LATEST_VERSION}).`
        : `Schema "${schema}": pending migrations ${report.pending.join(', ')}${
            report.breakingPending.length
              ? ` (breaking: ${report.breakingPending.join(', ')})`
              : ' (all expand-only)'
          }.`,
      report.processes.length === 0
        ? 'No tool-ledger process of this schema is connected.'
        : `Connected: ${report.processes.map((p) => `${p.connections} connection(s) of code for schema level ${p.version}`).join('; ')}.`,
      ...(report.unnamedConnections > 0
        ? [
            `${report.unnamedConnections} other connection(s) to this database carry no tool-ledger application_name (other programs, or releases before it was set): check them yourself.`,
          ]
        : []),
      ...report.incompatible.map((p) => `Not compatible: processes ${p.why}.`),
      report.compatible
        ? 'Compatible: safe to migrate with these processes running.'
        : 'Not safe to migrate now.',
    ];
    return lines.join('\n');
  });
  return report.compatible ? EXIT.OK : EXIT.FAILURE;
}
