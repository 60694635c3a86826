import pg from 'pg';
import { type DeriveKeyInput, deriveKey } from '../contract/derive-key.js';
import { type PgPoolLike, pgDriver } from '../ledger/drivers/pg.js';
import { pgConnectOptions } from '../ledger/drivers/pg-connect.js';
import { applyMigrations } from '../ledger/migrate.js';
import { LATEST_VERSION, migrationScript } from '../ledger/migrations.js';
import {
  applyLayoutMigrations,
  type Layout,
  partitionedMigrationScript,
  readStoredLayout,
} from '../ledger/partitioned.js';
import { maintainSql } from '../ledger/partitioned-sql.js';
import { purgeBatch, startPurge } from '../ledger/purge.js';
import { loadDeploymentSecret, rotateStoredSecret } from '../ledger/settings.js';
import { countExpiredSql, forgottenTable, runsTable, settingsTable } from '../ledger/sql.js';
import { hashKey } from '../telemetry/key-hash.js';
import { configuredSecret } from '../telemetry/key-secret.js';
import { ATTR, KEY_HASH_SECRET_ENV } from '../telemetry/vocabulary.js';
import { CliError, EXIT, maskDatabaseUrl, usageError } from './cli-error.js';
import { type Connection, connect, type Db, purgeConnection, queryable, requireLedgerTable } from './db.js';
import {
  escapeTerminal,
  fields,
  formatDuration,
  formatTime,
  indent,
  jaegerTraceUrl,
  plural,
  quoted,
  table,
  terminalSafeJson,
} from './format.js';
import { auditedKey, type KeyForm, keyCell, keyForm } from './key-display.js';
import { scrubText, scrubValue } from './scrub.js';
import { noSecretHelp, supportSecret } from './support-secret.js';
import {
  forgetKeySql,
  forgottenByKeySql,
  forgottenTableExistsSql,
  keySecretUpdatedAtSql,
  listRunsSql,
  runsByJobSql,
  runsByKeySql,
  settingsTableExistsSql,
  statsSql,
} from './support-sql.js';
import { formatStory, keyStory } from './trace.js';

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  readonly readStdin: () => Promise<string>;
}

export function print(io: Io, json: boolean, data: unknown, human: () => string): void {
  io.out(json ? terminalSafeJson(data) : human());
}

export async function withDb<T>(connection: Connection, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = await connect(connection);
  try {
    return await fn(db);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(
      `Database error: ${error instanceof Error ? error.message : String(error)}`,
      EXIT.FAILURE,
      {
        cause: error,
      },
    );
  } finally {
    await db.close().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------------------------

export async function migrateCommand(
  io: Io,
  opts: {
    printSql: boolean;
    json: boolean;
    schema: string;
    connection: () => Connection;
    /** Undefined: the table layout, unless the schema is partitioned already (then its own migrations). */
    layout?: { readonly layout: Layout; readonly widthSeconds: number } | undefined;
  },
): Promise<number> {
  if (opts.printSql) {
    io.out(
      opts.layout?.layout === 'partitioned'
        ? partitionedMigrationScript(opts.schema, opts.layout.widthSeconds)
        : migrationScript(opts.schema),
    );
    return EXIT.OK;
  }
  const connection = opts.connection();
  const pool = new pg.Pool({ ...pgConnectOptions(pg.Client, connection.databaseUrl, 10_000), max: 1 });
  pool.on('error', () => {});
  const driver = pgDriver(pool as unknown as PgPoolLike, {
    ownsPool: true,
    preparedStatements: true,
    // A migration may wait on another process's advisory lock; the CLI user can interrupt it.
    answerTimeoutMs: 0,
  });
  let applied: Array<number | string>;
  try {
    const stored = await readStoredLayout(driver, connection.schema);
    if (stored?.layout === 'partitioned' && opts.layout?.layout === 'table') {
      throw new CliError(
        `Schema "${connection.schema}" holds the partitioned layout; it does not convert back. Run migrate without --layout (or with --layout partitioned).`,
        EXIT.USAGE,
      );
    }
    const wanted =
      opts.layout ??
      (stored?.layout === 'partitioned'
        ? { layout: 'partitioned' as const, widthSeconds: stored.widthSeconds ?? 86_400 }
        : undefined);
    applied = wanted
      ? await applyLayoutMigrations(driver, connection.schema, wanted)
      : await applyMigrations(driver, connection.schema);
    // Made here too, so a deployment whose application role may only read the settings table has its secret.
    await loadDeploymentSecret(driver, connection.schema);
  } catch (error) {
    if (error instanceof CliError) throw error;
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : '';
    throw new CliError(
      `Migration of schema "${connection.schema}" on ${maskDatabaseUrl(connection.databaseUrl)} failed: ${
        error instanceof Error ? error.message : String(error)
      }${cause ? ` (${cause})` : ''}`,
      EXIT.FAILURE,
      { cause: error },
    );
  } finally {
    await driver.close().catch(() => {});
  }
  print(io, opts.json, { schema: connection.schema, applied, version: LATEST_VERSION }, () =>
    applied.length === 0
      ? `Schema "${connection.schema}" is up to date (version ${LATEST_VERSION}).`
      : `Applied migration${applied.length > 1 ? 's' : ''} ${applied.join(', ')} to schema "${connection.schema}" (now at version ${LATEST_VERSION}).`,
  );
  return EXIT.OK;
}

// ---------------------------------------------------------------------------------------------------------------

/** A recorded step as the `steps` column keeps it (see src/ledger/run-row.ts). */
interface StepRecordView {
  status: string;
  attempt: number;
  result?: string | null;
  error?: Record<string, unknown> | null;
  startedAt?: string;
  completedAt?: string;
}

/** A run's steps for support: status, attempt and times, results and errors scrubbed like the run's. */
function stepsView(row: InspectRow) {
  return Object.entries(row.steps ?? {}).map(([name, step]) => {
    let result: unknown = null;
    if (typeof step.result === 'string') {
      try {
        result = scrubValue(JSON.parse(step.result));
      } catch {
        result = scrubValue(step.result);
      }
    }
    return {
      name,
      status: step.status,
      // Started by an earlier attempt of a run still in flight (or marked unknown): its effect may have happened.
      unknown: step.status === 'started' && (row.status === 'unknown' || step.attempt < row.attempt),
      attempt: step.attempt,
      startedAt: step.startedAt ?? null,
      completedAt: step.completedAt ?? null,
      result,
      error: step.error ? scrubStoredError(step.error) : null,
    };
  });
}

interface InspectRow {
  id: string;
  tenant_id: string;
  tool_name: string;
  idempotency_key: string;
  user_id: string | null;
  parameter_hash: string;
  status: string;
  final: boolean;
  attempt: number;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  result_json: unknown;
  error_json: Record<string, unknown> | null;
  job_id: string | null;
  trace_id: string | null;
  span_id: string | null;
  conflict_count: number;
  last_conflict_at: Date | null;
  created_at: Date;
  started_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  expires_at: Date;
  lease_lapsed: boolean | null;
  db_now: Date;
  steps: Record<string, StepRecordView> | null;
}

/**
 * The stored error keeps its machine fields; what a person or the world wrote is scrubbed: the message, the
 * details and a `ToolFailure`'s reason, which handlers fill from whatever the downstream service said.
 */
function scrubStoredError(error: Record<string, unknown> | null): unknown {
  if (error === null || typeof error !== 'object') return error;
  const { message, details, reason, ...rest } = error;
  const scrubbed = (value: unknown) => (typeof value === 'string' ? scrubText(value) : scrubValue(value));
  return {
    ...rest,
    ...(message === undefined ? {} : { message: scrubbed(message) }),
    ...(reason === undefined ? {} : { reason: scrubbed(reason) }),
    ...(details === undefined ? {} : { details: scrubValue(details) }),
  };
}

/** How `inspect` finds runs: one full key, a key in any tenant and tool, or a background job id. */
export type InspectLookup =
  | { readonly by: 'key'; readonly key: string; readonly tenant?: string; readonly tool?: string }
  | { readonly by: 'job'; readonly jobId: string; readonly tenant?: string; readonly tool?: string };

/** The lookup in words, every value escaped: a typed or pasted key can hold terminal control sequences too. */
function describeLookup(lookup: InspectLookup): string {
  const scope = `${lookup.tenant === undefined ? '' : `tenant ${quoted(lookup.tenant)}, `}${
    lookup.tool === undefined ? '' : `tool ${quoted(lookup.tool)}, `
  }`;
  return lookup.by === 'key' ? `${scope}key ${quoted(lookup.key)}` : `${scope}job ${quoted(lookup.jobId)}`;
}

interface ForgottenAuditRow {
  run_id: string;
  tenant_id: string;
  tool_name: string;
  forgotten_by: string;
  forgotten_at: Date;
  reason: string | null;
}

/** A forget audit record as support reads it: the reason is free text someone typed, so it is scrubbed. */
function describeForgotten(row: ForgottenAuditRow) {
  return {
    runId: row.run_id,
    tenant: row.tenant_id,
    tool: row.tool_name,
    forgottenBy: row.forgotten_by,
    forgottenAt: row.forgotten_at,
    reason: row.reason === null ? null : scrubText(row.reason),
  };
}

/**
 * The audit records of a key's forgotten runs. The audit holds the key in its telemetry form (raw when safe,
 * else its HMAC), so the typed key is put in that form to find them; without the secret an unsafe key cannot be
 * looked up, and a key hashed before a rotation of the secret no longer matches.
 */
async function forgottenRuns(
  db: Db,
  schema: string,
  lookup: InspectLookup & { by: 'key' },
  secret: string | undefined,
): Promise<ForgottenAuditRow[]> {
  const [audit] = await db.query<{ exists: boolean }>(forgottenTableExistsSql, [schema]);
  if (!audit?.exists) return [];
  const form = keyForm(lookup.key, secret);
  const recorded = auditedKey(form);
  if (recorded === null) return [];
  return db.query<ForgottenAuditRow>(forgottenByKeySql(schema), [
    recorded.attribute,
    recorded.value,
    lookup.tenant ?? null,
    lookup.tool ?? null,
  ]);
}

export async function inspectCommand(
  io: Io,
  opts: {
    lookup: InspectLookup;
    json: boolean;
    jaegerUrl: string;
    connection: Connection;
    /** `--trace`: add every call made with the key, read from Jaeger (`jaegerUrl`) and VictoriaLogs. */
    trace?: { readonly logsUrl: string };
  },
): Promise<number> {
  const { lookup } = opts;
  const schema = opts.connection.schema;
  const { rows, secret, forgotten } = await withDb(opts.connection, async (db) => {
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
        ? await forgottenRuns(db, schema, lookup, secret?.secret)
        : [];
    return { rows: found, secret, forgotten };
  });
  if (rows.length === 0 && forgotten.length > 0) {
    const records = forgotten.map(describeForgotten);
    print(io, opts.json, { schema, runs: [], forgotten: records }, () =>
      [
        `No run for ${describeLookup(lookup)} in schema ${quoted(schema)}: it was forgotten (tool-ledger forget).`,
        ...records.map((r) =>
          fields([
            ['run', `${r.runId} (tenant ${quoted(r.tenant)}, tool ${quoted(r.tool)})`],
            ['forgotten', formatTime(r.forgottenAt)],
            ['by', r.forgottenBy],
            ['reason', r.reason ?? '- (none given)'],
          ]),
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
  const described = rows.map((row) =>
    describeRun(
      row,
      showKey(row.idempotency_key),
      row.user_id === null ? null : keyForm(row.user_id, secret?.secret),
      opts.jaegerUrl,
      schema,
    ),
  );
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

function describeRun(
  row: InspectRow,
  shownKey: KeyForm,
  shownUser: KeyForm | null,
  jaegerUrl: string,
  schema: string,
): { data: Record<string, unknown>; text: string } {
  const expired =
    row.expires_at.getTime() <= row.db_now.getTime() && !(row.status === 'in_progress' && !row.lease_lapsed);
  const jaeger = row.trace_id ? jaegerTraceUrl(jaegerUrl, row.trace_id) : null;
  const result = scrubValue(row.result_json);
  // The user id came from the caller and may be an email or a name: it is shown as telemetry would show such an
  // id (the key policy: raw when safe, else its HMAC), never merely with the recognisable parts masked.
  const user = shownUser === null ? null : shownUser.key;
  const error = scrubStoredError(row.error_json);
  const data = {
    id: row.id,
    tenant: row.tenant_id,
    tool: row.tool_name,
    key: shownKey.key,
    ...(shownKey.key === null ? { keyHash: shownKey.keyHash } : {}),
    user,
    ...(shownUser !== null && shownUser.key === null ? { userHash: shownUser.keyHash } : {}),
    status: row.status,
    final: row.final,
    attempt: row.attempt,
    parameterHash: row.parameter_hash,
    jobId: row.job_id,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    leaseLapsed: Boolean(row.lease_lapsed),
    expired,
    conflictCount: row.conflict_count,
    lastConflictAt: row.last_conflict_at,
    createdAt: row.created_at,
    startedAt: row.started_at,
    updatedAt: row.updated_at,
    completedAt: row.completed_at,
    expiresAt: row.expires_at,
    result,
    error,
    steps: stepsView(row),
    traceId: row.trace_id,
    spanId: row.span_id,
    jaegerUrl: jaeger,
  };
  let lease = '-';
  if (row.status === 'in_progress' && row.lease_expires_at) {
    const lapsedFor = (row.db_now.getTime() - row.lease_expires_at.getTime()) / 1000;
    lease = row.lease_lapsed
      ? `LAPSED ${formatDuration(lapsedFor)} ago (was held by ${row.lease_owner ?? '?'} until ${formatTime(row.lease_expires_at)}): stuck; the next duplicate call takes it over`
      : `held by ${row.lease_owner ?? '?'} until ${formatTime(row.lease_expires_at)}`;
  }
  const status = `${row.status}${row.status === 'failed' ? (row.final ? ' (final)' : ' (retryable)') : ''}${
    expired ? ' (expired: the key counts as new)' : ''
  }`;
  const lines = [
    `Run ${row.id} in ${runsTable(schema)}`,
    fields([
      ['tenant', row.tenant_id],
      ['tool', row.tool_name],
      ['key', keyCell(shownKey)],
      ['user', shownUser === null ? '-' : keyCell(shownUser)],
      ['status', status],
      ['attempt', String(row.attempt)],
      ['parameter hash', row.parameter_hash],
      ['job id', row.job_id ?? '-'],
      ['lease', lease],
      ['created', formatTime(row.created_at)],
      ['started', formatTime(row.started_at)],
      ['updated', formatTime(row.updated_at)],
      ['completed', formatTime(row.completed_at)],
      ['expires', formatTime(row.expires_at)],
      [
        'conflicts',
        row.conflict_count > 0 ? `${row.conflict_count} (last ${formatTime(row.last_conflict_at)})` : '0',
      ],
      ['trace id', row.trace_id ?? '- (telemetry was off for this call)'],
      ['span id', row.span_id ?? '-'],
      ['jaeger', jaeger ?? '-'],
    ]),
  ];
  if (row.result_json !== null && row.result_json !== undefined) {
    lines.push('result (scrubbed):', indent(JSON.stringify(result, null, 2)));
  }
  if (row.error_json !== null && row.error_json !== undefined) {
    lines.push('error (scrubbed):', indent(JSON.stringify(error, null, 2)));
  }
  if (data.steps.length > 0) {
    lines.push(
      'steps (results scrubbed):',
      indent(
        table(
          ['STEP', 'STATUS', 'ATTEMPT', 'STARTED', 'COMPLETED', 'RESULT'],
          data.steps.map((s) => [
            s.name,
            s.unknown ? 'started, never recorded: outcome unknown' : s.status,
            String(s.attempt),
            s.startedAt ?? '-',
            s.completedAt ?? '-',
            s.result === null
              ? s.error
                ? String((s.error as { message?: unknown }).message ?? '')
                : '-'
              : JSON.stringify(s.result),
          ]),
        ),
      ),
    );
  }
  return { data, text: lines.join('\n') };
}

// ---------------------------------------------------------------------------------------------------------------

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
}

export const STATUSES = ['in_progress', 'succeeded', 'failed', 'unknown'] as const;

export async function listCommand(
  io: Io,
  opts: {
    status: string;
    stale: boolean;
    tenant: string | undefined;
    tool: string | undefined;
    limit: number;
    json: boolean;
    jaegerUrl: string;
    connection: Connection;
  },
): Promise<number> {
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
      return `${plural(runs.length, what)}:\n${body}${more}`;
    },
  );
  return EXIT.OK;
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * The partitioned layout's maintenance (`tool-ledger maintain`): makes the partitions for the next `aheadSeconds`
 * and drops those that ended `graceSeconds` ago with no live lease. Prints what it did to each partition.
 */
export async function maintainCommand(
  io: Io,
  opts: { aheadSeconds: number; graceSeconds: number; json: boolean; connection: Connection },
): Promise<number> {
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

export async function purgeCommand(
  io: Io,
  opts: { dryRun: boolean; batchSize: number; json: boolean; connection: Connection },
): Promise<number> {
  const { schema } = opts.connection;
  const started = Date.now();
  const outcome = await withDb(opts.connection, async (db) => {
    await requireLedgerTable(db, schema);
    const [countRow] = await db.query<{ count: string }>(countExpiredSql(schema));
    const expired = Number(countRow?.count ?? 0);
    if (opts.dryRun) return { expired, deleted: 0 };
    const connection = purgeConnection(db);
    let deleted = 0;
    let sweep = await startPurge(connection, schema);
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

// ---------------------------------------------------------------------------------------------------------------

/** Where `hash-key` reads the raw key: argv is readable by every local user through ps, so it never comes from there. */
export const RAW_KEY_ENV = 'TOOL_LEDGER_RAW_KEY' as const;

export async function hashKeyCommand(
  io: Io,
  opts: { json: boolean; schema: string; connection: () => Connection },
): Promise<number> {
  const key = io.env[RAW_KEY_ENV] ?? (await io.readStdin()).replace(/\r?\n$/, '');
  if (key === '') throw usageError(`hash-key needs a non-empty key on standard input or in ${RAW_KEY_ENV}.`);
  let found = await supportSecret(io.env, undefined, opts.schema);
  if (found === undefined) {
    let connection: Connection;
    try {
      connection = opts.connection();
    } catch {
      throw new CliError(
        `${KEY_HASH_SECRET_ENV} is not set, and there is no database to read the deployment's secret from: set DATABASE_URL (and --schema) to the service's ledger, or export the secret the service uses.`,
      );
    }
    found = await withDb(connection, (db) => supportSecret(io.env, db, connection.schema));
  }
  if (found === undefined) throw new CliError(`${noSecretHelp(opts.schema)}, then run hash-key again.`);
  const hash = hashKey(key, found.secret);
  const tag = `${ATTR.IDEMPOTENCY_KEY_HASH}=${hash}`;
  if (opts.json) {
    io.out(JSON.stringify({ attribute: ATTR.IDEMPOTENCY_KEY_HASH, hash, jaegerTag: tag }, null, 2));
  } else {
    // The hash alone on stdout, so `$(tool-ledger hash-key ...)` works; the hint goes to stderr.
    io.out(hash);
    io.err(`Hashed under ${found.source}. Search Jaeger by tag: ${tag}`);
  }
  return EXIT.OK;
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * Replaces the deployment's key-hash secret. Processes read it once, at start, so each keeps hashing under the old
 * one until it restarts; spans, logs and forget-audit rows from before keep hashes under the old one.
 */
export async function rotateKeySecretCommand(
  io: Io,
  opts: { yes: boolean; json: boolean; connection: Connection },
): Promise<number> {
  const { schema } = opts.connection;
  const table = settingsTable(schema);
  const outcome = await withDb(opts.connection, async (db) => {
    const [exists] = await db.query<{ exists: boolean }>(settingsTableExistsSql, [schema]);
    if (!exists?.exists) {
      throw new CliError(
        `Schema "${schema}" has no ${table} table (migration 4). Check --schema, or run \`tool-ledger migrate --schema ${schema}\` first.`,
      );
    }
    const [current] = await db.query<{ updated_at: Date }>(keySecretUpdatedAtSql(schema));
    if (!opts.yes) return { previous: current?.updated_at ?? null, updatedAt: null };
    return {
      previous: current?.updated_at ?? null,
      updatedAt: await rotateStoredSecret(queryable(db), schema),
    };
  });
  if (configuredSecret({}, io.env) !== undefined) {
    io.err(
      `Note: ${KEY_HASH_SECRET_ENV} is set in this shell. Processes that set it hash under it, not under the stored secret; rotate it by deploying a new value to every process.`,
    );
  }
  const restart =
    'Processes read the secret at start: restart every process of this deployment, and until each has, its spans carry hashes under the old secret. Hashes emitted before (in Jaeger, logs and tool_runs_forgotten) no longer match hash-key.';
  print(
    io,
    opts.json,
    { schema, dryRun: !opts.yes, previousSetAt: outcome.previous, rotatedAt: outcome.updatedAt },
    () =>
      opts.yes
        ? `Rotated the key-hash secret in ${table}${outcome.previous === null ? ' (there was none)' : ''}. ${restart}`
        : `Would replace the key-hash secret in ${table} (${
            outcome.previous === null ? 'none stored yet' : `set ${formatTime(outcome.previous)}`
          }; dry run: nothing changed; pass --yes to rotate). ${restart}`,
  );
  return EXIT.OK;
}

// ---------------------------------------------------------------------------------------------------------------

export async function deriveKeyCommand(
  io: Io,
  opts: { input: DeriveKeyInput; json: boolean },
): Promise<number> {
  let key: string;
  try {
    key = deriveKey(opts.input);
  } catch (error) {
    throw usageError(error instanceof Error ? error.message : String(error));
  }
  print(io, opts.json, { key }, () => key);
  return EXIT.OK;
}

// ---------------------------------------------------------------------------------------------------------------

interface ForgottenRow {
  run_id: string;
  tenant_id: string;
  tool_name: string;
  forgotten_at: Date;
}

export async function forgetCommand(
  io: Io,
  opts: {
    key: string;
    tenant: string | undefined;
    tool: string | undefined;
    yes: boolean;
    by: string;
    reason: string | undefined;
    json: boolean;
    connection: Connection;
  },
): Promise<number> {
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

// ---------------------------------------------------------------------------------------------------------------

interface StatsRow {
  tool_name: string;
  status: string;
  count: string;
  stale: string;
  expired: string;
  conflicts: string;
}

export async function statsCommand(
  io: Io,
  opts: { tenant: string | undefined; json: boolean; connection: Connection },
): Promise<number> {
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
  const totals = { total: 0, in_progress: 0, succeeded: 0, failed: 0, stale: 0, expired: 0, conflicts: 0 };
  for (const r of byTool) {
    totals.total += r.count;
    if (r.status === 'in_progress' || r.status === 'succeeded' || r.status === 'failed')
      totals[r.status] += r.count;
    totals.stale += r.stale;
    totals.expired += r.expired;
    totals.conflicts += r.conflicts;
  }
  print(
    io,
    opts.json,
    { schema: opts.connection.schema, tenant: opts.tenant ?? null, totals, byTool },
    () => {
      // The tenant is echoed as typed, escaped: it may have been pasted from a hostile row or ticket.
      const scope = `${runsTable(opts.connection.schema)}${opts.tenant ? ` for tenant ${quoted(opts.tenant)}` : ''}`;
      if (byTool.length === 0) return `No runs in ${scope}.`;
      return [
        `Runs in ${scope}: ${totals.total} (in_progress ${totals.in_progress}, succeeded ${totals.succeeded}, failed ${totals.failed}; stale ${totals.stale}, expired ${totals.expired}, conflicts ${totals.conflicts})`,
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
