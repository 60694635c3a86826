import { readStoredLayout } from '../../ledger/partitioned.js';
import { maintainSql } from '../../ledger/partitioned-sql.js';
import { connectionOf, nonNegativeInt, positiveInt } from '../args.js';
import { CliError, EXIT } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, queryable, requireLedgerTable } from '../db.js';
import { plural } from '../format.js';
import { type Io, print, withDb } from '../io.js';

export const name = 'maintain';

export const options = {
  'ahead-seconds': { type: 'string' },
  'grace-seconds': { type: 'string' },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'maintain [--ahead-seconds N] [--grace-seconds N]',
      text: [
        'Partitioned layout: make the partitions for the next N s',
        '(default 172800) and drop those ended N s ago (default 0)',
        'that hold no live lease',
      ],
    },
  ],
  examples: [],
};

export function parse(args: Args, io: Io): MaintainOptions {
  return {
    aheadSeconds: positiveInt('--ahead-seconds', args.str('ahead-seconds'), 172_800),
    graceSeconds: nonNegativeInt('--grace-seconds', args.str('grace-seconds'), 0),
    json: args.json,
    connection: connectionOf(args, io),
  };
}

export interface MaintainOptions {
  aheadSeconds: number;
  graceSeconds: number;
  json: boolean;
  connection: Connection;
}

/**
 * The partitioned layout's maintenance (`tool-ledger maintain`): makes the partitions for the next `aheadSeconds`
 * and drops those that ended `graceSeconds` ago with no live lease. Prints what it did to each partition.
 */
export async function run(io: Io, opts: MaintainOptions): Promise<number> {
  const { schema } = opts.connection;
  const rows = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, schema);
    if ((await readStoredLayout(queryable(db), schema))?.layout !== 'partitioned') {
      throw new CliError(
        `Schema "${schema}" holds the table layout: purge it with \`tool-ledger purge --expired\`, or convert it with \`tool-ledger migrate --layout partitioned\`.`,
        EXIT.USAGE,
      );
    }
    return db.query<{ action: string; partition_name: string; row_count: string }>(maintainSql(schema), [
      opts.aheadSeconds,
      opts.graceSeconds,
    ]);
  });
  print(io, opts.json, { schema, partitions: rows }, () =>
    rows.length === 0
      ? `Schema "${schema}": every partition needed exists, none has ended.`
      : rows.map((r) => `${r.action} ${r.partition_name} (${plural(Number(r.row_count), 'row')})`).join('\n'),
  );
  return EXIT.OK;
}
