import { connectionOf, osUser, required } from '../args.js';
import { CliError, EXIT, usageError } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, requireLedgerTable } from '../db.js';
import { table } from '../format.js';
import { type Io, print, withDb } from '../io.js';
import { auditedKey, keyCell, keyForm } from '../key-display.js';
import { noSecretHelp, supportSecret } from '../support-secret.js';
import { resolvedTableExistsSql, resolveUnknownSql, unknownRunsByKeySql } from '../support-sql.js';

export const name = 'resolve';

export const options = {
  tenant: { type: 'string' },
  tool: { type: 'string' },
  key: { type: 'string' },
  result: { type: 'string' },
  failed: { type: 'string' },
  rerun: { type: 'boolean', default: false },
  by: { type: 'string' },
  reason: { type: 'string' },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage:
        'resolve --key K [--tenant T] [--tool N] (--result JSON | --failed MESSAGE | --rerun) [--by WHO] [--reason TEXT]',
      text: [
        'Settle a run in status unknown (an interrupted effect,',
        'listed by list --status unknown) once you have checked',
        'the provider: --result JSON it happened (replayed from',
        'now on), --failed MESSAGE a final failure, --rerun the',
        'next call runs it again; recorded in tool_runs_resolved',
      ],
    },
  ],
  // Its example stands in list's, after the listing of unknown runs it settles.
  examples: [],
};

export function parse(args: Args, io: Io): ResolveOptions {
  return {
    key: required('resolve', 'key', args.str('key')),
    tenant: args.str('tenant'),
    tool: args.str('tool'),
    resolution: resolutionOf({
      result: args.str('result'),
      failed: args.str('failed'),
      rerun: args.flag('rerun'),
    }),
    by: args.str('by') ?? osUser(io.env),
    reason: args.str('reason'),
    json: args.json,
    connection: connectionOf(args, io),
  };
}

/** How an operator settles an unknown outcome: the effect happened (its result), it failed for good, or run it again. */
export type Resolution =
  | { readonly kind: 'result'; readonly resultJson: string }
  | { readonly kind: 'failed'; readonly message: string }
  | { readonly kind: 'rerun' };

/** Reads `--result JSON | --failed MESSAGE | --rerun`: exactly one. */
export function resolutionOf(values: {
  result?: string | undefined;
  failed?: string | undefined;
  rerun?: boolean | undefined;
}): Resolution {
  const given = [values.result !== undefined, values.failed !== undefined, values.rerun === true].filter(
    Boolean,
  );
  if (given.length !== 1) {
    throw usageError(
      'resolve needs exactly one of --result JSON (the effect happened: this is its result), --failed MESSAGE (it did not happen and must not be retried: callers get this final failure) or --rerun (it did not happen: the next call with the key runs it again).',
    );
  }
  if (values.result !== undefined) {
    try {
      JSON.parse(values.result);
    } catch (error) {
      throw usageError(
        `--result must be JSON, as the tool would have returned it (for example '{"chargeId":"ch_1"}'): ${error instanceof Error ? error.message : String(error)}.`,
      );
    }
    return { kind: 'result', resultJson: values.result };
  }
  if (values.failed !== undefined) {
    if (values.failed.trim() === '') throw usageError('--failed needs a message that callers will read.');
    return { kind: 'failed', message: values.failed };
  }
  return { kind: 'rerun' };
}

/** The stored error a resolution leaves: a final ToolFailure, or a note on a retryable one. */
function storedErrorOf(resolution: Resolution, by: string): string | null {
  switch (resolution.kind) {
    case 'result':
      return null;
    case 'failed':
      return JSON.stringify({
        name: 'ToolFailure',
        code: 'TOOL_FAILED',
        message: resolution.message,
        final: true,
        reason: 'resolved_by_operator',
      });
    case 'rerun':
      return JSON.stringify({
        name: 'ToolLedgerError',
        code: 'OUTCOME_UNKNOWN',
        message: `Settled by ${by} as not done: the next call with this key runs it again.`,
        final: false,
      });
  }
}

interface UnknownRow {
  id: string;
  tenant_id: string;
  tool_name: string;
  error_json: { message?: string } | null;
}

export interface ResolveOptions {
  key: string;
  tenant: string | undefined;
  tool: string | undefined;
  resolution: Resolution;
  by: string;
  reason: string | undefined;
  json: boolean;
  connection: Connection;
}

/**
 * `tool-ledger resolve`: settles one run in status `unknown` (an interrupted effect whose rule was `'fail'`), with
 * an audit record of who, when and how. Refuses when the key names no unknown run, or more than one.
 */
export async function run(io: Io, opts: ResolveOptions): Promise<number> {
  const { schema } = opts.connection;
  const params = [opts.key, opts.tenant ?? null, opts.tool ?? null];
  const { form, settled } = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, schema);
    const [audit] = await db.query<{ exists: boolean }>(resolvedTableExistsSql, [schema]);
    if (!audit?.exists) {
      throw new CliError(
        `Schema "${schema}" has no resolve audit table yet. Run \`tool-ledger migrate --schema ${schema}\`, then resolve again.`,
      );
    }
    const form = keyForm(opts.key, (await supportSecret(io.env, db, schema))?.secret);
    const candidates = await db.query<UnknownRow>(unknownRunsByKeySql(schema), params);
    if (candidates.length === 0) {
      throw new CliError(
        `No run in status unknown for this key${opts.tenant ? ` in tenant ${JSON.stringify(opts.tenant)}` : ''}${opts.tool ? ` of tool ${JSON.stringify(opts.tool)}` : ''} in schema "${schema}". List them with \`tool-ledger list --status unknown\`.`,
        EXIT.NOT_FOUND,
      );
    }
    if (candidates.length > 1) {
      throw usageError(
        `This key has ${candidates.length} unknown runs (${candidates.map((c) => `${c.tenant_id}/${c.tool_name}`).join(', ')}): name one with --tenant and --tool.`,
      );
    }
    const recorded = auditedKey(form);
    if (recorded === null) {
      throw new CliError(
        `This key may hold personal data, so the audit records only its HMAC, and there is no secret to make it: ${noSecretHelp(schema)}, then resolve again.`,
      );
    }
    const resolution = opts.resolution;
    const settled = await db.query<{
      run_id: string;
      tenant_id: string;
      tool_name: string;
      resolved_at: Date;
    }>(resolveUnknownSql(schema), [
      ...params,
      resolution.kind,
      resolution.kind === 'result' ? resolution.resultJson : null,
      storedErrorOf(resolution, opts.by),
      recorded.attribute,
      recorded.value,
      opts.by,
      opts.reason ?? null,
    ]);
    return { form, settled };
  });
  const runs = settled.map((r) => ({
    runId: r.run_id,
    tenant: r.tenant_id,
    tool: r.tool_name,
    resolvedAt: r.resolved_at,
    ...form,
  }));
  const effect = {
    result: 'replays the given result',
    failed: 'replays this final failure',
    rerun: 'runs the tool again',
  }[opts.resolution.kind];
  print(
    io,
    opts.json,
    { schema, resolution: opts.resolution.kind, by: opts.by, reason: opts.reason ?? null, runs },
    () =>
      runs.length === 0
        ? 'Nothing was settled: the run left status unknown meanwhile. Inspect it with `tool-ledger inspect`.'
        : `Settled ${runs.length === 1 ? '1 run' : `${runs.length} runs`} as ${opts.resolution.kind} (recorded as resolved by ${opts.by}); the next call with this key ${effect}:\n${table(
            ['RUN', 'TENANT', 'TOOL', 'KEY'],
            runs.map((r) => [r.runId, r.tenant, r.tool, keyCell(r)]),
          )}`,
  );
  return EXIT.OK;
}
