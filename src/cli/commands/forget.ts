import { forgottenTable } from '../../ledger/sql.js';
import { connectionOf, osUser, required } from '../args.js';
import { CliError, EXIT } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, requireLedgerTable } from '../db.js';
import { escapeTerminal, plural, quoted, table } from '../format.js';
import { type Io, print, withDb } from '../io.js';
import { auditedKey, keyCell, keyForm } from '../key-display.js';
import { noSecretHelp, supportSecret } from '../support-secret.js';
import { forgetKeySql, forgottenTableExistsSql, runsByKeySql } from '../support-sql.js';
import { describeLookup, type InspectLookup, type InspectRow } from '../views/run.js';

export const name = 'forget';

export const options = {
  tenant: { type: 'string' },
  tool: { type: 'string' },
  key: { type: 'string' },
  yes: { type: 'boolean', default: false },
  by: { type: 'string' },
  reason: { type: 'string' },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'forget --key K [--tenant T] [--tool N] [--yes] [--by WHO] [--reason TEXT]',
      text: [
        'List the runs with key K that would be deleted (dry run);',
        '--yes deletes them and records who, when and why',
        '(key as HMAC) in tool_runs_forgotten',
      ],
    },
  ],
  examples: [
    "tool-ledger forget --key maria@example.com --reason 'erasure request 88'          # dry run",
    "tool-ledger forget --key maria@example.com --yes --by ana --reason 'erasure request 88'",
  ],
};

export function parse(args: Args, io: Io): ForgetOptions {
  return {
    key: required('forget', 'key', args.str('key')),
    tenant: args.str('tenant'),
    tool: args.str('tool'),
    yes: args.flag('yes'),
    by: args.str('by') ?? osUser(io.env),
    reason: args.str('reason'),
    json: args.json,
    connection: connectionOf(args, io),
  };
}

interface ForgottenRow {
  run_id: string;
  tenant_id: string;
  tool_name: string;
  forgotten_at: Date;
}

export interface ForgetOptions {
  key: string;
  tenant: string | undefined;
  tool: string | undefined;
  yes: boolean;
  by: string;
  reason: string | undefined;
  json: boolean;
  connection: Connection;
}

export async function run(io: Io, opts: ForgetOptions): Promise<number> {
  const { schema } = opts.connection;
  const lookup: InspectLookup = {
    by: 'key',
    key: opts.key,
    ...(opts.tenant === undefined ? {} : { tenant: opts.tenant }),
    ...(opts.tool === undefined ? {} : { tool: opts.tool }),
  };
  const { form, recorded, outcome } = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, schema);
    const form = keyForm(opts.key, (await supportSecret(io.env, db, schema))?.secret);
    const recorded = auditedKey(form);
    const params = [opts.key, opts.tenant ?? null, opts.tool ?? null];
    if (!opts.yes) {
      const rows = await db.query<InspectRow>(runsByKeySql(schema), params);
      const runs = rows.map((r) => ({
        runId: r.id,
        tenant: r.tenant_id,
        tool: r.tool_name,
        forgottenAt: null,
      }));
      return { form, recorded, outcome: runs };
    }
    const [audit] = await db.query<{ exists: boolean }>(forgottenTableExistsSql, [schema]);
    if (!audit?.exists) {
      throw new CliError(
        `Schema "${schema}" has no forget audit table yet. Run \`tool-ledger migrate --schema ${schema}\`, then forget again.`,
      );
    }
    if (recorded === null) {
      throw new CliError(
        `This key may hold personal data, so the audit records only its HMAC, and there is no secret to make it: ${noSecretHelp(schema)}, then forget again.`,
      );
    }
    const rows = await db.query<ForgottenRow>(forgetKeySql(schema), [
      ...params,
      recorded.attribute,
      recorded.value,
      opts.by,
      opts.reason ?? null,
    ]);
    const runs = rows.map((r) => ({
      runId: r.run_id,
      tenant: r.tenant_id,
      tool: r.tool_name,
      forgottenAt: r.forgotten_at as Date | null,
    }));
    return { form, recorded, outcome: runs };
  });
  const runs = outcome.map((r) => ({ ...r, ...form }));
  print(
    io,
    opts.json,
    { schema, dryRun: !opts.yes, by: opts.by, reason: opts.reason ?? null, recordedKey: recorded, runs },
    () => {
      if (runs.length === 0)
        return `No run for ${describeLookup(lookup)} in schema ${quoted(schema)}: nothing to forget.`;
      const body = table(
        ['RUN', 'TENANT', 'TOOL', 'KEY'],
        runs.map((r) => [r.runId, r.tenant, r.tool, keyCell(r)]),
      );
      return opts.yes
        ? `Forgot ${plural(runs.length, 'run')} (recorded in ${forgottenTable(schema)} as forgotten by ${escapeTerminal(opts.by)}):\n${body}`
        : `${plural(runs.length, 'run')} would be forgotten (dry run: nothing deleted; pass --yes to delete):\n${body}`;
    },
  );
  return EXIT.OK;
}
