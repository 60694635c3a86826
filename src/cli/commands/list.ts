import { awaitingView } from '../../support/approvals.js';
import { keyCell, keyForm } from '../../support/key-form.js';
import { type InspectRow, unknownReason } from '../../support/run-view.js';
import { listRunsSql } from '../../support/sql.js';
import { jaegerTraceUrl } from '../../support/trace.js';
import { connectionOf, DEFAULT_JAEGER_URL, positiveInt } from '../args.js';
import { EXIT, usageError } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, requireLedgerTable } from '../db.js';
import { escapeTerminal, formatDuration, formatTime, plural, quoted, table } from '../format.js';
import { type Io, print, withDb, withLedger } from '../io.js';
import { supportSecret } from '../support-secret.js';

export const name = 'list';

export const options = {
  status: { type: 'string' },
  stale: { type: 'boolean', default: false },
  tenant: { type: 'string' },
  tool: { type: 'string' },
  limit: { type: 'string' },
  'jaeger-url': { type: 'string' },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'list [--status S] [--stale]',
      text: [
        'List runs by status (default in_progress); --stale keeps only',
        'in_progress runs whose lease has lapsed (stuck); awaiting_approval',
        'lists the calls a person may still approve or decline, with user,',
        'deadline and scrubbed arguments',
      ],
    },
  ],
  examples: [
    "tool-ledger list --status in_progress --stale --json | jq '.runs[].key'",
    'tool-ledger list --status failed --tool charge_card --limit 20',
    'tool-ledger list --status unknown                                   # interrupted effects to settle',
    'tool-ledger list --status awaiting_approval --tenant acme           # then approve or decline',
    // What to do with an unknown run once the provider has been checked, right after the listing that shows it.
    `tool-ledger resolve --key order-991 --tool charge_card --result '{"chargeId":"ch_1"}' --reason 'seen in Stripe'`,
  ],
};

export const STATUSES = ['in_progress', 'succeeded', 'failed', 'unknown', 'awaiting_approval'] as const;

export function parse(args: Args, io: Io): ListOptions {
  const status = args.str('status') ?? 'in_progress';
  if (!(STATUSES as readonly string[]).includes(status)) {
    throw usageError(`--status must be one of ${STATUSES.join(', ')}, got ${JSON.stringify(status)}.`);
  }
  if (args.flag('stale') && status !== 'in_progress') {
    throw usageError(
      '--stale applies to --status in_progress only (a lease only matters while a run is held).',
    );
  }
  return {
    status,
    stale: args.flag('stale'),
    tenant: args.str('tenant'),
    tool: args.str('tool'),
    limit: positiveInt('--limit', args.str('limit'), 100),
    json: args.json,
    jaegerUrl: args.str('jaeger-url') ?? DEFAULT_JAEGER_URL,
    connection: connectionOf(args, io),
  };
}

interface ListRow {
  id: string;
  tenant_id: string;
  tool_name: string;
  idempotency_key: string;
  status: string;
  attempt: number;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  started_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  trace_id: string | null;
  conflict_count: number;
  lease_lapsed: boolean | null;
  lapsed_seconds: number | null;
  error_json: Record<string, unknown> | null;
  steps: InspectRow['steps'];
}

export interface ListOptions {
  status: string;
  stale: boolean;
  tenant: string | undefined;
  tool: string | undefined;
  limit: number;
  json: boolean;
  jaegerUrl: string;
  connection: Connection;
}

export async function run(io: Io, opts: ListOptions): Promise<number> {
  if (opts.status === 'awaiting_approval') return listAwaiting(io, opts);
  const { rows, secret } = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, opts.connection.schema);
    const found = await db.query<ListRow>(listRunsSql(opts.connection.schema), [
      opts.status,
      opts.stale,
      opts.tenant ?? null,
      opts.tool ?? null,
      opts.limit,
    ]);
    return { rows: found, secret: await supportSecret(io.env, db, opts.connection.schema) };
  });
  const runs = rows.map((r) => ({
    id: r.id,
    tenant: r.tenant_id,
    tool: r.tool_name,
    // A listing is read over shoulders and pasted into tickets: keys appear only as telemetry would show them.
    ...keyForm(r.idempotency_key, secret?.secret),
    status: r.status,
    attempt: r.attempt,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at,
    leaseLapsed: Boolean(r.lease_lapsed),
    lapsedSeconds: r.lapsed_seconds,
    startedAt: r.started_at,
    updatedAt: r.updated_at,
    completedAt: r.completed_at,
    conflictCount: r.conflict_count,
    traceId: r.trace_id,
    jaegerUrl: r.trace_id ? jaegerTraceUrl(opts.jaegerUrl, r.trace_id) : null,
    ...(r.status === 'unknown' ? { why: unknownReason(r) } : {}),
  }));
  print(
    io,
    opts.json,
    { schema: opts.connection.schema, status: opts.status, stale: opts.stale, runs },
    () => {
      const what = `${opts.stale ? 'stale ' : ''}${opts.status} run`;
      if (runs.length === 0) return `No ${what}s in schema ${quoted(opts.connection.schema)}.`;
      const body = table(
        [
          'TENANT',
          'TOOL',
          'KEY',
          'ATTEMPT',
          'LEASE OWNER',
          opts.status === 'in_progress' ? 'LAPSED FOR' : 'UPDATED',
          'TRACE',
        ],
        runs.map((r) => [
          r.tenant,
          r.tool,
          keyCell(r),
          String(r.attempt),
          r.leaseOwner ?? '-',
          opts.status === 'in_progress'
            ? r.leaseLapsed
              ? formatDuration(r.lapsedSeconds ?? 0)
              : 'lease held'
            : formatTime(r.updatedAt),
          r.traceId ?? '-',
        ]),
      );
      const more = runs.length === opts.limit ? `\n(first ${opts.limit}; raise --limit to see more)` : '';
      // Each unknown run says why under the table: the reason is too long for a column.
      const why = runs
        .filter((r) => r.why !== undefined)
        .map((r) => `  ${escapeTerminal(`${r.tenant}/${r.tool} ${keyCell(r)}: ${r.why}`)}`);
      return `${plural(runs.length, what)}:\n${body}${more}${why.length === 0 ? '' : `\nwhy unknown:\n${why.join('\n')}`}`;
    },
  );
  return EXIT.OK;
}

/**
 * The calls awaiting a decision, oldest first, through `ledger.approvals.list` (the inbox the console shows): the
 * key and user as telemetry shows them, the arguments scrubbed (support/approvals.ts).
 */
async function listAwaiting(io: Io, opts: ListOptions): Promise<number> {
  const { schema } = opts.connection;
  const secret = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, schema);
    return supportSecret(io.env, db, schema);
  });
  const waiting = await withLedger(opts.connection, (ledger) =>
    ledger.approvals.list({
      ...(opts.tenant === undefined ? {} : { tenant: opts.tenant }),
      ...(opts.tool === undefined ? {} : { tool: opts.tool }),
      limit: Math.min(opts.limit, 1000),
    }),
  );
  const calls = waiting.map((a) => {
    const view = awaitingView(a, secret?.secret);
    return { ...view, ...view.key, user: view.user === null ? null : keyCell(view.user) };
  });
  print(io, opts.json, { schema, status: opts.status, calls }, () => {
    if (calls.length === 0) return `No calls awaiting approval in schema ${quoted(schema)}.`;
    const body = table(
      ['TENANT', 'TOOL', 'KEY', 'USER', 'REQUESTED', 'DEADLINE', 'RUN'],
      calls.map((c) => [
        c.tenant,
        c.tool,
        keyCell(c),
        c.user ?? '-',
        formatTime(c.requestedAt),
        formatTime(c.deadline),
        c.runId,
      ]),
    );
    const more = calls.length === opts.limit ? `\n(first ${opts.limit}; raise --limit to see more)` : '';
    const args = calls.map(
      (c) => `  ${escapeTerminal(`${c.tenant}/${c.tool} ${keyCell(c)}: ${JSON.stringify(c.arguments)}`)}`,
    );
    return `${plural(calls.length, 'call')} awaiting approval (decide with tool-ledger approve or decline):\n${body}${more}\narguments (scrubbed):\n${args.join('\n')}`;
  });
  return EXIT.OK;
}
