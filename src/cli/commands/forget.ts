import { forgottenTable } from '../../ledger/sql/names.js';
import { forgetKey } from '../../support/forget.js';
import { keyCell } from '../../support/key-form.js';
import { connectionOf, required } from '../args.js';
import { EXIT } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, requireLedgerTable } from '../db.js';
import { escapeTerminal, plural, quoted, table } from '../format.js';
import { actorOf, actorStep, type Io, print, withDb } from '../io.js';
import { supportSecret } from '../support-secret.js';
import { describeLookup, type InspectLookup } from '../views/run.js';

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
      usage: 'forget --key K [--tenant T] [--tool N] [--yes --by WHO] [--reason TEXT]',
      text: [
        'List the runs with key K that would be deleted (dry run);',
        '--yes --by WHO deletes them and records who, when and why',
        '(key as HMAC) in tool_runs_forgotten and the audit chain',
      ],
    },
  ],
  examples: [
    "tool-ledger forget --key maria@example.com --reason 'erasure request 88'          # dry run",
    "tool-ledger forget --key maria@example.com --yes --by ana --reason 'erasure request 88'",
  ],
};

export function parse(args: Args, io: Io): ForgetOptions {
  const { dryRun, by } = actorStep('forget', args, {
    dryRun: 'unless-yes',
    records: 'the person who asked for the deletion',
  });
  return {
    key: required('forget', 'key', args.str('key')),
    tenant: args.str('tenant'),
    tool: args.str('tool'),
    yes: !dryRun,
    by,
    reason: args.str('reason'),
    json: args.json,
    connection: connectionOf(args, io),
  };
}

export interface ForgetOptions {
  key: string;
  tenant: string | undefined;
  tool: string | undefined;
  yes: boolean;
  /** Who forgets; required with `yes`. */
  by: string | undefined;
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
  const outcome = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, schema);
    return forgetKey(db, schema, {
      key: opts.key,
      tenant: opts.tenant,
      tool: opts.tool,
      ...actorOf({ dryRun: !opts.yes, by: opts.by }),
      reason: opts.reason,
      secret: (await supportSecret(io.env, db, schema))?.secret,
    });
  });
  const runs = outcome.runs.map((r) => ({ ...r, ...outcome.form }));
  print(
    io,
    opts.json,
    {
      schema,
      dryRun: !opts.yes,
      by: opts.by ?? null,
      reason: opts.reason ?? null,
      recordedKey: outcome.recordedKey,
      runs,
    },
    () => {
      if (runs.length === 0)
        return `No run for ${describeLookup(lookup)} in schema ${quoted(schema)}: nothing to forget.`;
      const body = table(
        ['RUN', 'TENANT', 'TOOL', 'KEY'],
        runs.map((r) => [r.runId, r.tenant, r.tool, keyCell(r)]),
      );
      return opts.yes
        ? `Forgot ${plural(runs.length, 'run')} (recorded in ${forgottenTable(schema)} as forgotten by ${escapeTerminal(opts.by ?? '')}):\n${body}`
        : `${plural(runs.length, 'run')} would be forgotten (dry run: nothing deleted; pass --yes --by WHO to delete):\n${body}`;
    },
  );
  return EXIT.OK;
}
