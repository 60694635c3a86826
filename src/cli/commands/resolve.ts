import { keyCell } from '../../support/key-form.js';
import { SupportRefusal } from '../../support/refusal.js';
import {
  resolutionOf as checkedResolution,
  RESOLUTION_EFFECT,
  type Resolution,
  resolveUnknown,
} from '../../support/resolve.js';
import { connectionOf, required } from '../args.js';
import { cliErrorOf, EXIT, usageError } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, requireLedgerTable } from '../db.js';
import { escapeTerminal, plural, table } from '../format.js';
import { actorOf, actorStep, type Io, print, withDb } from '../io.js';
import { supportSecret } from '../support-secret.js';

export const name = 'resolve';

export const options = {
  tenant: { type: 'string' },
  tool: { type: 'string' },
  key: { type: 'string' },
  result: { type: 'string' },
  failed: { type: 'string' },
  rerun: { type: 'boolean', default: false },
  yes: { type: 'boolean', default: false },
  by: { type: 'string' },
  reason: { type: 'string' },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage:
        'resolve --key K [--tenant T] [--tool N] (--result JSON | --failed MESSAGE | --rerun) [--yes --by WHO] [--reason TEXT]',
      text: [
        'Settle a run in status unknown (an interrupted effect,',
        'listed by list --status unknown) once you have checked',
        'the provider: --result JSON it happened (replayed from',
        'now on), --failed MESSAGE a final failure, --rerun the',
        'next call runs it again. Without --yes a dry run; --yes',
        'settles it, recorded in tool_runs_resolved as by WHO',
      ],
    },
  ],
  // Its example stands in list's, after the listing of unknown runs it settles.
  examples: [],
};

export type { Resolution } from '../../support/resolve.js';

/** Reads `--result JSON | --failed MESSAGE | --rerun`: exactly one. */
export function resolutionOf(values: {
  result?: string | undefined;
  failed?: string | undefined;
  rerun?: boolean | undefined;
}): Resolution {
  const given = [values.result, values.failed, values.rerun || undefined].filter((v) => v !== undefined);
  if (given.length !== 1) {
    throw usageError(
      'resolve needs exactly one of --result JSON (the effect happened: this is its result), --failed MESSAGE (it did not happen and must not be retried: callers get this final failure) or --rerun (it did not happen: the next call with the key runs it again).',
    );
  }
  try {
    return checkedResolution(values);
  } catch (error) {
    if (error instanceof SupportRefusal) throw cliErrorOf(error);
    throw error;
  }
}

export function parse(args: Args, io: Io): ResolveOptions {
  const { dryRun, by } = actorStep('resolve', args, {
    dryRun: 'unless-yes',
    records: 'the person who settled the run',
  });
  return {
    key: required('resolve', 'key', args.str('key')),
    tenant: args.str('tenant'),
    tool: args.str('tool'),
    resolution: resolutionOf({
      result: args.str('result'),
      failed: args.str('failed'),
      rerun: args.flag('rerun'),
    }),
    yes: !dryRun,
    by,
    reason: args.str('reason'),
    json: args.json,
    connection: connectionOf(args, io),
  };
}

export interface ResolveOptions {
  key: string;
  tenant: string | undefined;
  tool: string | undefined;
  resolution: Resolution;
  /** Settle it; without, a dry run. */
  yes: boolean;
  /** Who settles it; required with `yes`. */
  by: string | undefined;
  reason: string | undefined;
  json: boolean;
  connection: Connection;
}

/**
 * `tool-ledger resolve`: settles one run in status `unknown` (support/resolve.ts), or says which it would settle.
 * Refuses when the key names no unknown run, or more than one.
 */
export async function run(io: Io, opts: ResolveOptions): Promise<number> {
  const { schema } = opts.connection;
  const outcome = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, schema);
    return resolveUnknown(db, schema, {
      key: opts.key,
      tenant: opts.tenant,
      tool: opts.tool,
      resolution: opts.resolution,
      ...actorOf({ dryRun: !opts.yes, by: opts.by }),
      reason: opts.reason,
      secret: (await supportSecret(io.env, db, schema))?.secret,
    });
  });
  const runs = outcome.runs.map((r) => ({ ...r, ...outcome.form }));
  const kind = opts.resolution.kind;
  const effect = RESOLUTION_EFFECT[kind];
  const body = () =>
    table(
      ['RUN', 'TENANT', 'TOOL', 'KEY'],
      runs.map((r) => [r.runId, r.tenant, r.tool, keyCell(r)]),
    );
  print(
    io,
    opts.json,
    {
      schema,
      dryRun: outcome.dryRun,
      resolution: kind,
      by: opts.by ?? null,
      reason: opts.reason ?? null,
      runs,
    },
    () => {
      if (outcome.dryRun)
        return `${plural(runs.length, 'run')} would be settled as ${kind} (dry run: nothing changed; pass --yes --by WHO to settle); the next call with this key would then ${effect.replace('replays', 'replay').replace('runs', 'run')}:\n${body()}`;
      return runs.length === 0
        ? 'Nothing was settled: the run left status unknown meanwhile. Inspect it with `tool-ledger inspect`.'
        : `Settled ${plural(runs.length, 'run')} as ${kind} (recorded as resolved by ${escapeTerminal(opts.by ?? '')}); the next call with this key ${effect}:\n${body()}`;
    },
  );
  return EXIT.OK;
}
