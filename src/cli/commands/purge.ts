import { readStoredLayout } from '../../ledger/partitioned.js';
import { purgeBatch, startPurge } from '../../ledger/purge.js';
import { runsTable } from '../../ledger/sql/names.js';
import { countExpiredSql } from '../../ledger/sql/purge.js';
import { connectionOf, positiveInt } from '../args.js';
import { EXIT, usageError } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, purgeConnection, queryable, requireLedgerTable } from '../db.js';
import { plural } from '../format.js';
import { type Io, print, withDb } from '../io.js';

export const name = 'purge';

export const options = {
  expired: { type: 'boolean', default: false },
  'dry-run': { type: 'boolean', default: false },
  'batch-size': { type: 'string' },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'purge --expired [--dry-run]',
      text: ['Delete rows past their TTL in batches, progress on stderr'],
    },
  ],
  examples: ['tool-ledger purge --expired --dry-run', 'tool-ledger purge --expired --batch-size 5000'],
};

export function parse(args: Args, io: Io): PurgeOptions {
  if (!args.flag('expired')) {
    throw usageError('purge needs --expired: it only ever deletes rows past their TTL.');
  }
  return {
    dryRun: args.flag('dry-run'),
    batchSize: positiveInt('--batch-size', args.str('batch-size'), 1000),
    json: args.json,
    connection: connectionOf(args, io),
  };
}

export interface PurgeOptions {
  dryRun: boolean;
  batchSize: number;
  json: boolean;
  connection: Connection;
}

/** Deletes the rows past their TTL in batches, progress on stderr (`--dry-run` only counts them). */
export async function run(io: Io, opts: PurgeOptions): Promise<number> {
  const { schema } = opts.connection;
  const started = Date.now();
  const outcome = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, schema);
    const [countRow] = await db.query<{ count: string }>(countExpiredSql(schema));
    const expired = Number(countRow?.count ?? 0);
    if (opts.dryRun) return { expired, deleted: 0 };
    const connection = purgeConnection(db);
    let deleted = 0;
    const distributed = (await readStoredLayout(queryable(db), schema))?.distributed === true;
    let sweep = await startPurge(connection, schema, undefined, distributed);
    while (sweep.kind !== 'done') {
      const batch = await purgeBatch(connection, schema, opts.batchSize, sweep);
      deleted += batch.deleted;
      sweep = batch.next;
      if (batch.deleted > 0) {
        // The estimate can be passed: rows keep expiring while the purge runs.
        const total = Math.max(expired, deleted);
        io.err(
          `purged ${deleted} of ~${plural(total, 'expired row')} (${Math.floor((deleted / total) * 100)}%)`,
        );
      }
    }
    return { expired, deleted };
  });
  const seconds = (Date.now() - started) / 1000;
  print(
    io,
    opts.json,
    { schema, dryRun: opts.dryRun, expired: outcome.expired, deleted: outcome.deleted, seconds },
    () =>
      opts.dryRun
        ? `${plural(outcome.expired, 'expired row')} in ${runsTable(schema)} would be purged (dry run: nothing deleted).`
        : `Purged ${plural(outcome.deleted, 'expired row')} from ${runsTable(schema)} in ${seconds.toFixed(1)}s.`,
  );
  return EXIT.OK;
}
