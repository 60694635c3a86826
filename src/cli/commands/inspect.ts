import { auditEntriesOf, type RunAuditEntry } from '../../support/audit.js';
import { forgottenRecords } from '../../support/forget.js';
import { keyForm } from '../../support/key-form.js';
import { settlementsOf } from '../../support/resolve.js';
import { runsByJobSql, runsByKeySql } from '../../support/sql.js';
import { keyStory } from '../../support/trace.js';
import { connectionOf, DEFAULT_JAEGER_URL, DEFAULT_LOGS_URL, required } from '../args.js';
import { CliError, EXIT, usageError } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, requireLedgerTable } from '../db.js';
import { escapeTerminal, fields, formatTime, plural, quoted } from '../format.js';
import { type Io, print, withDb } from '../io.js';
import { noSecretHelp, supportSecret } from '../support-secret.js';
import { formatStory } from '../trace.js';
import { describeLookup, describeRun, type InspectLookup, type InspectRow } from '../views/run.js';

export const name = 'inspect';

export const options = {
  tenant: { type: 'string' },
  tool: { type: 'string' },
  key: { type: 'string' },
  job: { type: 'string' },
  'jaeger-url': { type: 'string' },
  trace: { type: 'boolean', default: false },
  'logs-url': { type: 'string' },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'inspect --key K [--tenant T] [--tool N]',
      text: [
        'Show every run with key K (in any tenant and tool unless',
        'narrowed): status, attempts, timestamps, parameter hash,',
        'scrubbed result or error, trace id and Jaeger link, and',
        'its audit chain entries (approve, decline, resolve, forget)',
      ],
    },
    {
      usage: 'inspect --key K --trace [--jaeger-url URL] [--logs-url URL]',
      text: [
        'Also every call made with the key: time, outcome,',
        'attempt, waited ms, trace id and the original it',
        "followed, from Jaeger's API and VictoriaLogs",
      ],
    },
    { usage: 'inspect --job ID [--tenant T] [--tool N]', text: ['Show the run of a background job'] },
  ],
  examples: [
    'tool-ledger inspect --tenant acme --tool create_invoice --key order-1042',
    'tool-ledger inspect --key order-1042',
    'tool-ledger inspect --tenant acme --tool create_invoice --key order-1042 --trace',
    'tool-ledger inspect --job job_7f3a',
  ],
};

export function parse(args: Args, io: Io): InspectOptions {
  const str = args.str;
  const key = str('key');
  const job = str('job');
  if ((key === undefined) === (job === undefined)) {
    throw usageError('inspect needs --key K or --job ID (one of them), optionally with --tenant and --tool.');
  }
  const scope = {
    ...(str('tenant') === undefined ? {} : { tenant: required('inspect', 'tenant', str('tenant')) }),
    ...(str('tool') === undefined ? {} : { tool: required('inspect', 'tool', str('tool')) }),
  };
  return {
    lookup:
      key !== undefined
        ? { by: 'key', key: required('inspect', 'key', key), ...scope }
        : { by: 'job', jobId: required('inspect', 'job', job), ...scope },
    json: args.json,
    jaegerUrl: str('jaeger-url') ?? DEFAULT_JAEGER_URL,
    connection: connectionOf(args, io),
    ...(args.flag('trace') ? { trace: { logsUrl: str('logs-url') ?? DEFAULT_LOGS_URL } } : {}),
  };
}

export interface InspectOptions {
  lookup: InspectLookup;
  json: boolean;
  jaegerUrl: string;
  connection: Connection;
  /** `--trace`: add every call made with the key, read from Jaeger (`jaegerUrl`) and VictoriaLogs. */
  trace?: { readonly logsUrl: string };
}

export async function run(io: Io, opts: InspectOptions): Promise<number> {
  const { lookup } = opts;
  const schema = opts.connection.schema;
  const { rows, secret, forgotten, settled, audits, forgottenAudits } = await withDb(
    opts.connection,
    async (db) => {
      await requireLedgerTable(db, schema);
      const sql = lookup.by === 'key' ? runsByKeySql(schema) : runsByJobSql(schema);
      const found = await db.query<InspectRow>(sql, [
        lookup.by === 'key' ? lookup.key : lookup.jobId,
        lookup.tenant ?? null,
        lookup.tool ?? null,
      ]);
      // User ids (and keys found through their job) are shown the way telemetry shows ids, which needs the secret.
      const secret = await supportSecret(io.env, db, schema);
      const forgotten =
        found.length === 0 && lookup.by === 'key'
          ? await forgottenRecords(db, schema, lookup.key, secret?.secret, lookup.tenant, lookup.tool)
          : [];
      const settled = await Promise.all(found.map((row) => settlementsOf(db, schema, row.id)));
      // Every decision a person took on each run, from the audit chain: approve, decline, resolve, forget.
      const audits = await Promise.all(found.map((row) => auditEntriesOf(db, schema, row.id)));
      const forgottenAudits = await Promise.all(forgotten.map((r) => auditEntriesOf(db, schema, r.runId)));
      return { rows: found, secret, forgotten, settled, audits, forgottenAudits };
    },
  );
  if (rows.length === 0 && forgotten.length > 0) {
    const records = forgotten.map((r, i) => ({ ...r, audit: forgottenAudits[i] ?? [] }));
    print(io, opts.json, { schema, runs: [], forgotten: records }, () =>
      [
        `No run for ${describeLookup(lookup)} in schema ${quoted(schema)}: it was forgotten (tool-ledger forget).`,
        ...records.map(
          (r) =>
            fields([
              ['run', `${r.runId} (tenant ${quoted(r.tenant)}, tool ${quoted(r.tool)})`],
              ['forgotten', formatTime(r.forgottenAt)],
              ['by', r.forgottenBy],
              ['reason', r.reason ?? '- (none given)'],
            ]) + auditText(r.audit),
        ),
      ].join('\n'),
    );
    return EXIT.NOT_FOUND;
  }
  if (rows.length === 0) {
    throw new CliError(
      `No run for ${describeLookup(lookup)} in schema ${quoted(schema)}. ` +
        'It was never claimed, was rejected before reaching the ledger, or expired and was purged' +
        (lookup.by === 'key' && secret === undefined && keyForm(lookup.key, undefined).key === null
          ? `; whether it was forgotten is unknown: ${noSecretHelp(schema)}.`
          : '.'),
      EXIT.NOT_FOUND,
    );
  }
  // Support typed a key, so it is shown as given; a key found through its job is shown the way telemetry shows it.
  const showKey = (key: string) =>
    lookup.by === 'key' ? { key, keyHash: null } : keyForm(key, secret?.secret);
  const described = rows.map((row, i) => {
    const run = describeRun(
      row,
      showKey(row.idempotency_key),
      row.user_id === null ? null : keyForm(row.user_id, secret?.secret),
      opts.jaegerUrl,
      schema,
    );
    const audit = audits[i] ?? [];
    const withAudit = { data: { ...run.data, audit }, text: `${run.text}${auditText(audit)}` };
    // How an operator settled it (tool-ledger resolve, or the console), from the audit.
    const resolutions = settled[i] ?? [];
    if (resolutions.length === 0) return withAudit;
    return {
      data: { ...withAudit.data, resolutions },
      text: `${withAudit.text}\nsettled (tool_runs_resolved):\n${resolutions
        .map(
          (r) =>
            `  ${formatTime(r.at)} as ${r.resolution} by ${escapeTerminal(r.by)}${r.reason === null ? '' : `: ${escapeTerminal(r.reason)}`}`,
        )
        .join('\n')}`,
    };
  });
  const trace = opts.trace;
  const runs =
    trace === undefined
      ? described
      : await Promise.all(
          described.map(async (run, i) => {
            const row = rows[i] as InspectRow;
            const query = {
              // Searched as telemetry exported it: raw when safe, else its HMAC under the service's secret.
              key: keyForm(row.idempotency_key, secret?.secret),
              tenant: row.tenant_id,
              tool: row.tool_name,
              // A margin for clocks: spans carry the caller's clock, the row the database's.
              since: new Date(row.created_at.getTime() - 5 * 60_000),
              jaegerUrl: opts.jaegerUrl,
              logsUrl: trace.logsUrl,
              runTraceId: row.trace_id,
            };
            const story = await keyStory(query);
            return {
              data: { ...run.data, calls: story.calls, callProblems: story.problems },
              text: `${run.text}\n${formatStory(story, query)}`,
            };
          }),
        );
  // One full key names at most one run: scripts get that run itself, as before.
  const single = lookup.by === 'key' && lookup.tenant !== undefined && lookup.tool !== undefined;
  print(io, opts.json, single ? runs[0]?.data : { schema, runs: runs.map((r) => r.data) }, () =>
    runs.length === 1
      ? (runs[0]?.text ?? '')
      : [`${plural(runs.length, 'run')} match ${describeLookup(lookup)}:`, ...runs.map((r) => r.text)].join(
          '\n\n',
        ),
  );
  return EXIT.OK;
}

/** A run's entries of the audit chain, one line each (the reason scrubbed); nothing when it has none. */
function auditText(entries: readonly RunAuditEntry[]): string {
  if (entries.length === 0) return '';
  const line = (e: RunAuditEntry) => {
    const edited = e.detail?.edited === true ? ` (edited: runs ${e.approvedFingerprint})` : '';
    const how = typeof e.detail?.resolution === 'string' ? ` as ${e.detail.resolution}` : '';
    const why = e.reason === null ? '' : `: ${e.reason}`;
    return `  ${formatTime(e.at)} ${e.action}${how} by ${escapeTerminal(`${e.by}${why}`)}${edited} [entry ${e.id}]`;
  };
  return `\naudit chain (tool_ledger_audit):\n${entries.map(line).join('\n')}`;
}
