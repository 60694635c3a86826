import { verifyAudit } from '../../ledger/audit/verify.js';
import { auditChainExistsSql } from '../../support/search-sql.js';
import { connectionOf } from '../args.js';
import { CliError, EXIT, usageError } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, queryable, requireLedgerTable } from '../db.js';
import { escapeTerminal, plural, quoted, table } from '../format.js';
import { type Io, print, withDb } from '../io.js';

export const name = 'audit';

export const options = {
  verify: { type: 'boolean', default: false },
  tenant: { type: 'string' },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'audit --verify [--tenant T]',
      text: [
        'Recompute the hash chain of decisions (approve, decline, forget,',
        'resolve) per tenant; exit 5 naming the first broken entry of each:',
        'missing (a deleted entry: a gap in the links) or altered (a hash',
        'mismatch). Prints each chain head to keep elsewhere',
      ],
    },
  ],
  examples: ['tool-ledger audit --verify --tenant acme'],
};

export interface AuditOptions {
  readonly tenant: string | undefined;
  readonly json: boolean;
  readonly connection: Connection;
}

export function parse(args: Args, io: Io): AuditOptions {
  if (!args.flag('verify')) {
    throw usageError('audit needs --verify: it recomputes the audit chain and names the first broken entry.');
  }
  return { tenant: args.str('tenant'), json: args.json, connection: connectionOf(args, io) };
}

/** `tool-ledger audit --verify`: every chain (or one tenant's) recomputed by `verifyAudit`. */
export async function run(io: Io, opts: AuditOptions): Promise<number> {
  const { schema } = opts.connection;
  const result = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, schema);
    const [chain] = await db.query<{ exists: boolean }>(auditChainExistsSql, [schema]);
    if (!chain?.exists) {
      throw new CliError(
        `Schema "${schema}" has no audit chain yet (migration 11). Run \`tool-ledger migrate --schema ${schema}\`.`,
      );
    }
    return verifyAudit(queryable(db), schema, opts.tenant);
  });
  const heads = [...result.heads].map(([tenant, head]) => ({ tenant, id: head.id, hash: head.hash }));
  const holds = result.breaks.length === 0;
  print(
    io,
    opts.json,
    {
      schema,
      tenant: opts.tenant ?? null,
      holds,
      entries: result.entries,
      tenants: result.tenants,
      heads,
      breaks: result.breaks,
    },
    () => {
      const scope = `${opts.tenant === undefined ? '' : `tenant ${quoted(opts.tenant)} in `}schema ${quoted(schema)}`;
      if (result.entries === 0) return `No audit entries for ${scope}: nothing to verify.`;
      const headTable = table(
        ['TENANT', 'HEAD ENTRY', 'HEAD HASH'],
        heads.map((h) => [h.tenant, h.id, h.hash]),
      );
      if (holds) {
        return `The audit chain of ${scope} holds: ${plural(result.entries, 'entry', 'entries')} over ${plural(result.tenants, 'tenant')}.\nHeads (keep a copy elsewhere: a deletion of the newest entries leaves a shorter chain that holds):\n${headTable}`;
      }
      return [
        `The audit chain of ${scope} is BROKEN for ${plural(result.breaks.length, 'tenant')}:`,
        ...result.breaks.map(
          (b) =>
            `  tenant ${escapeTerminal(JSON.stringify(b.tenant))}: first broken entry ${b.id} (${b.kind}): ${b.detail}`,
        ),
      ].join('\n');
    },
  );
  return holds ? EXIT.OK : EXIT.BROKEN;
}
