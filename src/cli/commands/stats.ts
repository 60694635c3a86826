import { runsTable } from '../../ledger/sql/names.js';
import { statsSql } from '../../support/sql.js';
import { connectionOf } from '../args.js';
import { EXIT } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, requireLedgerTable } from '../db.js';
import { escapeTerminal, quoted, table } from '../format.js';
import { type Io, print, withDb } from '../io.js';

export const name = 'stats';

export const options = { tenant: { type: 'string' } } as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    { usage: 'stats [--tenant T]', text: ['Count runs by tool and status, with stale and expired rows'] },
  ],
  examples: ['tool-ledger stats --tenant acme'],
};

export function parse(args: Args, io: Io): StatsOptions {
  return { tenant: args.str('tenant'), json: args.json, connection: connectionOf(args, io) };
}

interface StatsRow {
  tool_name: string;
  status: string;
  count: string;
  stale: string;
  expired: string;
  conflicts: string;
}

export interface StatsOptions {
  tenant: string | undefined;
  json: boolean;
  connection: Connection;
}

export async function run(io: Io, opts: StatsOptions): Promise<number> {
  const rows = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, opts.connection.schema);
    return db.query<StatsRow>(statsSql(opts.connection.schema), [opts.tenant ?? null]);
  });
  const byTool = rows.map((r) => ({
    tool: r.tool_name,
    status: r.status,
    count: Number(r.count),
    stale: Number(r.stale),
    expired: Number(r.expired),
    conflicts: Number(r.conflicts),
  }));
  // Every status the rows hold is counted, the four of every ledger always (unknown: interrupted effects that
  // wait for a person), and any other (a later version's) after them, so the summary adds up to the total.
  const byStatus: Record<string, number> = { in_progress: 0, succeeded: 0, failed: 0, unknown: 0 };
  const totals = { total: 0, stale: 0, expired: 0, conflicts: 0 };
  for (const r of byTool) {
    totals.total += r.count;
    byStatus[r.status] = (byStatus[r.status] ?? 0) + r.count;
    totals.stale += r.stale;
    totals.expired += r.expired;
    totals.conflicts += r.conflicts;
  }
  print(
    io,
    opts.json,
    {
      schema: opts.connection.schema,
      tenant: opts.tenant ?? null,
      totals: { ...totals, ...byStatus },
      byTool,
    },
    () => {
      // The tenant is echoed as typed, escaped: it may have been pasted from a hostile row or ticket.
      const scope = `${runsTable(opts.connection.schema)}${opts.tenant ? ` for tenant ${quoted(opts.tenant)}` : ''}`;
      if (byTool.length === 0) return `No runs in ${scope}.`;
      return [
        `Runs in ${scope}: ${totals.total} (${Object.entries(byStatus)
          .map(([status, count]) => `${escapeTerminal(status)} ${count}`)
          .join(', ')}; stale ${totals.stale}, expired ${totals.expired}, conflicts ${totals.conflicts})`,
        '',
        table(
          ['TOOL', 'STATUS', 'COUNT', 'STALE', 'EXPIRED', 'CONFLICTS'],
          byTool.map((r) => [
            r.tool,
            r.status,
            String(r.count),
            String(r.stale),
            String(r.expired),
            String(r.conflicts),
          ]),
        ),
      ].join('\n');
    },
  );
  return EXIT.OK;
}
