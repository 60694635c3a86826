import type { StandardSchemaV1 } from '@standard-schema/spec';
import { ToolLedgerError } from './contract/errors.js';
import type {
  HandlerContext,
  ToolKind,
  ToolOptions,
  UnknownOutcomeRule,
  UnknownRunContext,
} from './contract/types.js';
import { isMultiHostUrl, maskUrlPassword, parseConnectionUrl } from './ledger/drivers/connection-url.js';
import { isKeywordString, keywordStringToUrl } from './ledger/drivers/keyword-string.js';
import type { PgPoolLike } from './ledger/drivers/pg.js';
import type { PGliteLike } from './ledger/drivers/pglite.js';
import { isValidSchemaName } from './ledger/sql.js';
import type { TelemetryOptions } from './telemetry/options.js';
import { KEY_HASH_SECRET_ENV } from './telemetry/vocabulary.js';

/** Options of `createLedger`. Pick at most one of `connectionString`, `pool` and `pglite`. */
export interface LedgerOptions {
  /**
   * A Postgres connection string; tool-ledger opens (and closes) its own `pg.Pool`. A libpq multi-host URL works
   * too (`postgres://app@db-a:5432,db-b:5432/app?target_session_attrs=read-write`, or `?host=db-a,db-b`): each new
   * connection goes to the first host that accepts it and, with `read-write` or `primary`, is not a standby, so
   * after a failover the pool reaches the promoted one. `connect_timeout` in it counts per host, in seconds.
   * A libpq keyword string (`host=db-a,db-b dbname=app user=app`), which pg alone misreads as a database name, is
   * read as the URL it stands for.
   */
  readonly connectionString?: string;
  /** A `pg.Pool` you own; `close()` leaves it open. One client is held for LISTEN while calls wait. */
  readonly pool?: PgPoolLike;
  /**
   * A PGlite instance you own, or a PGlite data directory (`memory://` or a path) that tool-ledger opens.
   * With no database option at all: `DATABASE_URL` when set, otherwise an in-memory PGlite.
   */
  readonly pglite?: PGliteLike | string;
  /**
   * Postgres schema holding the ledger tables.
   * @default 'tool_ledger'
   */
  readonly schema?: string;
  /**
   * How long a run is remembered, counted from its claim (the start of the attempt that completed it); a handler
   * that outlasts it keeps its result this long after its completion. Past it the key counts as new.
   * @default 86400
   */
  readonly ttlSeconds?: number;
  /**
   * How long a claim holds a key without renewal. Handlers renew it `leaseSeconds / 3` after the last renewal (at
   * most `leaseSeconds / 2`); when the owner dies, another caller takes over after this long.
   * @default 30
   */
  readonly leaseSeconds?: number;
  /**
   * How long a duplicate waits for a parallel first execution before `IN_PROGRESS`. 0 rejects at once.
   * @default 10
   */
  readonly waitSeconds?: number;
  /**
   * Apply pending migrations in `createLedger` (under an advisory lock, safe with many processes starting at once).
   * Set false when a DBA applies `migrationSql()` by hand.
   * @default true
   */
  readonly migrate?: boolean;
  /**
   * How `tool_runs` is laid out. `'partitioned'` range-partitions it by expiry, so `purgeExpired()` drops whole
   * expired partitions instead of deleting rows (docs/operations.md, "Partitioned layout"). The layout is recorded
   * in the schema; opening it with the other one fails with `CONFIG_INVALID`. With `migrate`, opening a table-layout
   * schema as `'partitioned'` converts it (its rows stay, as one legacy partition).
   * @default 'table'
   */
  readonly layout?: 'table' | 'partitioned';
  /**
   * The partitioned layout's partition width, fixed when the layout is made: one partition per this many seconds
   * of expiry time. A claim looks in every partition, so keep their number small: a few per `ttlSeconds`.
   * @default 86400
   */
  readonly partitionWidthSeconds?: number;
  /**
   * Pool size when tool-ledger opens its own `pg.Pool`. Connections open only as concurrent calls need them, so
   * the default covers 20 concurrent calls without queueing; each call holds a connection for one statement at a time.
   * @default 20
   */
  readonly poolSize?: number;
  /**
   * Connection timeout when tool-ledger opens its own `pg.Pool`; past it calls fail with `LEDGER_UNAVAILABLE`.
   * With a multi-host URL it bounds each host's turn (unless the URL sets `connect_timeout`), and the whole
   * connect gets one turn per host plus one.
   * @default 5
   */
  readonly connectTimeoutSeconds?: number;
  /**
   * Server-side `statement_timeout` on connections tool-ledger opens: Postgres cancels a statement running longer
   * (`57014`, retryable). In transactional mode it bounds the handler's own statements too. 0 turns it off.
   * @default 5
   */
  readonly statementTimeoutSeconds?: number;
  /**
   * How long to wait for the answer to any one statement (and, on a pool you pass in, for a free client as well)
   * before giving up with a retryable `LEDGER_UNAVAILABLE`: the bound on a silently dead network. A client that
   * timed out is discarded. Keep it above `statementTimeoutSeconds`. 0 turns it off.
   * @default 10
   */
  readonly queryTimeoutSeconds?: number;
  /**
   * How many outcomes whose completion failed this process keeps in memory to save once the database answers.
   * Past it, a result that cannot be saved is not kept and the caller is told so (`LEDGER_UNAVAILABLE`, not
   * retryable: the action ran).
   * @default 1000
   */
  readonly maxUnsavedResults?: number;
  /**
   * The same bound in bytes of result and error JSON.
   * @default 67108864
   */
  readonly maxUnsavedResultBytes?: number;
  /**
   * Run the ledger's statements as named prepared statements on pg (plans cached per connection). Behind a pooler
   * that cannot track them (PgBouncer in transaction mode before 1.21) the driver notices the first refusal
   * (42P05/26000), resends that statement unnamed, sends every later one unnamed and warns once
   * (`TOOL_LEDGER_POOLER`); setting false skips the named attempt from the start.
   * @default true
   */
  readonly preparedStatements?: boolean;
  /**
   * Completed results this process keeps in memory, so a replay from the same process needs no round trip. An
   * entry lasts until the row's expiry by the database clock. A row deleted by hand before it expires still
   * replays from a process that cached it, until then. `0` turns the cache off.
   * @default 10000
   */
  readonly replayCacheEntries?: number;
  /**
   * Memory bound of the replay cache (results as JSON text, plus a fixed overhead per entry).
   * @default 33554432 (32 MiB)
   */
  readonly replayCacheMaxBytes?: number;
  /** OpenTelemetry options, or `false` to emit nothing. @default {} */
  readonly telemetry?: TelemetryOptions | false;
}

export type DatabaseChoice =
  | { readonly kind: 'connectionString'; readonly connectionString: string }
  | { readonly kind: 'pool'; readonly pool: PgPoolLike }
  | { readonly kind: 'pglite'; readonly pglite: PGliteLike | string | undefined };

export interface ResolvedConfig {
  readonly database: DatabaseChoice;
  readonly schema: string;
  readonly ttlSeconds: number;
  readonly leaseSeconds: number;
  readonly waitSeconds: number;
  readonly migrate: boolean;
  readonly layout: 'table' | 'partitioned';
  readonly partitionWidthSeconds: number;
  readonly poolSize: number;
  readonly connectTimeoutSeconds: number;
  readonly statementTimeoutSeconds: number;
  readonly queryTimeoutSeconds: number;
  readonly maxUnsavedResults: number;
  readonly maxUnsavedResultBytes: number;
  readonly preparedStatements: boolean;
  readonly replayCacheEntries: number;
  readonly replayCacheMaxBytes: number;
  readonly telemetry: TelemetryOptions | false;
}

export const DEFAULTS = Object.freeze({
  schema: 'tool_ledger',
  ttlSeconds: 86_400,
  leaseSeconds: 30,
  waitSeconds: 10,
  layout: 'table',
  partitionWidthSeconds: 86_400,
  poolSize: 20,
  connectTimeoutSeconds: 5,
  statementTimeoutSeconds: 5,
  queryTimeoutSeconds: 10,
  maxUnsavedResults: 1000,
  maxUnsavedResultBytes: 64 * 1024 * 1024,
  replayCacheEntries: 10_000,
  replayCacheMaxBytes: 32 * 1024 * 1024,
});

function checkCount(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0)
    throw invalid(`${name} must be an integer >= 0, got ${String(value)}.`);
  return value;
}

function invalid(message: string): ToolLedgerError {
  return new ToolLedgerError('CONFIG_INVALID', message);
}

/**
 * The largest delay Node's timers take (2^31 - 1 ms, about 24.8 days); a longer one fires at once, which would
 * renew a lease every millisecond or end a wait immediately.
 */
export const MAX_TIMER_SECONDS = 2_147_483;
/** ttlSeconds drives no timer, only SQL arithmetic: a century is plenty and keeps timestamps sane. */
export const MAX_TTL_SECONDS = 100 * 365 * 86_400;

export function checkSeconds(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number = MAX_TIMER_SECONDS,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw invalid(`${name} must be a finite number of seconds from ${min} to ${max}, got ${String(value)}.`);
  }
  return value;
}

/** Refuses option names the type does not know (a typo such as `leaseSecond` would otherwise be ignored). */
function checkKnown(what: string, options: object, known: Readonly<Record<string, true>>): void {
  for (const name of Object.keys(options)) {
    if (known[name]) continue;
    const hint = Object.keys(known).find((k) => k.toLowerCase().startsWith(name.toLowerCase().slice(0, 4)));
    throw invalid(
      `${what} has no option "${name}"${hint ? `; did you mean "${hint}"?` : ''}. Known options: ${Object.keys(known).join(', ')}.`,
    );
  }
}

const LEDGER_OPTION_NAMES = {
  connectionString: true,
  pool: true,
  pglite: true,
  schema: true,
  ttlSeconds: true,
  leaseSeconds: true,
  waitSeconds: true,
  migrate: true,
  layout: true,
  partitionWidthSeconds: true,
  poolSize: true,
  connectTimeoutSeconds: true,
  statementTimeoutSeconds: true,
  queryTimeoutSeconds: true,
  maxUnsavedResults: true,
  maxUnsavedResultBytes: true,
  preparedStatements: true,
  replayCacheEntries: true,
  replayCacheMaxBytes: true,
  telemetry: true,
} as const satisfies Record<keyof LedgerOptions, true>;

const TOOL_OPTION_NAMES = {
  name: true,
  kind: true,
  description: true,
  title: true,
  input: true,
  handler: true,
  volatileFields: true,
  transactional: true,
  destructive: true,
  isFinalError: true,
  resumeAbandoned: true,
  leaseSeconds: true,
  waitSeconds: true,
  ttlSeconds: true,
  onUnknown: true,
} as const satisfies Record<keyof ToolOptions<undefined, unknown>, true>;

// postgres:// and postgresql:// URLs, libpq keyword strings ("host=... dbname=...") and socket paths.
const CONNECTION_STRING = /^(postgres(ql)?:\/\/\S*|\/\S*|(\s*\w+\s*=\s*\S*)+\s*)$/;

function checkConnectionString(value: unknown, source: string): string {
  if (typeof value !== 'string' || !(isKeywordString(value) || CONNECTION_STRING.test(value))) {
    throw invalid(
      `${source} must be a Postgres connection string such as postgres://user@host:5432/db (or "host=... dbname=..."), got ${typeof value === 'string' ? 'a string that is neither' : typeof value}.`,
    );
  }
  const url = isKeywordString(value) ? keywordUrl(value, source) : value;
  if (isMultiHostUrl(url)) {
    try {
      parseConnectionUrl(url);
    } catch (error) {
      throw error instanceof ToolLedgerError ? invalid(`${source}: ${error.message}`) : error;
    }
  } else if (value.startsWith('postgres')) {
    try {
      new URL(value);
    } catch {
      throw invalid(
        `${source} is not a valid URL; use postgres://user@host:5432/db (percent-encode special characters).`,
      );
    }
  }
  return value;
}

/** The URL a keyword string stands for, its syntax errors named after the option that carried it. */
function keywordUrl(value: string, source: string): string {
  try {
    return keywordStringToUrl(value);
  } catch (error) {
    throw error instanceof ToolLedgerError ? invalid(`${source}: ${error.message}`) : error;
  }
}

function checkLayoutOption(value: unknown): 'table' | 'partitioned' {
  if (value === undefined) return DEFAULTS.layout;
  if (value === 'table' || value === 'partitioned') return value;
  throw invalid(`layout must be 'table' or 'partitioned', got ${JSON.stringify(value)}.`);
}

let warnedInMemory = false;

/** The implicit in-memory ledger loses every key on restart and shares none between processes. */
function implicitInMemory(env: NodeJS.ProcessEnv): DatabaseChoice {
  const advice =
    'Pass connectionString (or set DATABASE_URL), pool, or pglite: "memory://" to choose the in-memory ledger on purpose.';
  if (env.NODE_ENV === 'production') {
    throw invalid(
      `No database given and NODE_ENV=production: an in-memory ledger would forget every key on restart and share none between instances. ${advice}`,
    );
  }
  if (!warnedInMemory) {
    warnedInMemory = true;
    process.emitWarning(
      `tool-ledger: no database given, using an in-memory PGlite; keys are lost on restart. ${advice}`,
      { code: 'TOOL_LEDGER_IN_MEMORY' },
    );
  }
  return { kind: 'pglite', pglite: undefined };
}

/**
 * The shortest key-hash secret accepted, in UTF-8 bytes. The HMAC only keeps hashed emails and phone numbers from
 * being reversed by trying candidates while the secret itself cannot be guessed; a short or typed word can be.
 */
export const MIN_KEY_HASH_SECRET_BYTES = 16;

/**
 * Refuses a configured key-hash secret (`telemetry.keyHashSecret`, else `TOOL_LEDGER_KEY_HASH_SECRET`, the order
 * telemetry reads them in) shorter than `MIN_KEY_HASH_SECRET_BYTES`. The message never contains the secret.
 */
export function checkKeyHashSecret(telemetry: TelemetryOptions | false, env: NodeJS.ProcessEnv): void {
  if (telemetry === false || telemetry === null || typeof telemetry !== 'object') return;
  const option = telemetry.keyHashSecret;
  const fromOption = typeof option === 'string' && option.length > 0;
  const value = fromOption ? option : env[KEY_HASH_SECRET_ENV];
  if (typeof value !== 'string' || value.length === 0) return;
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes >= MIN_KEY_HASH_SECRET_BYTES) return;
  const source = fromOption ? 'telemetry.keyHashSecret' : `$${KEY_HASH_SECRET_ENV}`;
  throw invalid(
    `${source} is ${bytes} byte${bytes === 1 ? '' : 's'} long; a key-hash secret needs at least ${MIN_KEY_HASH_SECRET_BYTES} random bytes, or hashed keys can be reversed by guessing it. Generate one with \`openssl rand -hex 32\` and set the same value in every process and the CLI's shell, or leave it unset to use the deployment's secret stored in the ledger schema.`,
  );
}

/** What `ledger.config` shows in place of a secret. */
export const REDACTED = '[REDACTED]';

/**
 * The resolved config as `ledger.config` exposes it: applications log it at start, so it carries no secret. The
 * key-hash secret reads `[REDACTED]` and a connection string has its password masked; the ledger itself keeps
 * using the config `resolveConfig` returned. (A `pg.Pool` passed in already hides its password from logging.)
 */
export function publicConfig(config: ResolvedConfig): ResolvedConfig {
  const { database, telemetry } = config;
  return Object.freeze({
    ...config,
    database:
      database.kind === 'connectionString'
        ? Object.freeze({ kind: database.kind, connectionString: maskPassword(database.connectionString) })
        : database,
    telemetry:
      telemetry !== false && typeof telemetry.keyHashSecret === 'string'
        ? Object.freeze({ ...telemetry, keyHashSecret: REDACTED })
        : telemetry,
  });
}

/** A connection string without its password (URL form, with one host or several, or libpq keywords). */
function maskPassword(connectionString: string): string {
  const url = maskUrlPassword(connectionString, REDACTED);
  if (url !== undefined) return url;
  return connectionString.replace(/(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)/gi, `$1${REDACTED}`);
}

/** Resolves every default in one place and freezes the result. */
export function resolveConfig(
  options: LedgerOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedConfig {
  if (options === null || typeof options !== 'object')
    throw invalid('createLedger options must be an object.');
  checkKnown('createLedger', options, LEDGER_OPTION_NAMES);
  const given = (['connectionString', 'pool', 'pglite'] as const).filter((k) => options[k] !== undefined);
  if (given.length > 1) {
    throw invalid(`Pass only one of connectionString, pool and pglite (got ${given.join(' and ')}).`);
  }
  let database: DatabaseChoice;
  if (options.connectionString !== undefined) {
    database = {
      kind: 'connectionString',
      connectionString: checkConnectionString(options.connectionString, 'connectionString'),
    };
  } else if (options.pool !== undefined) {
    database = { kind: 'pool', pool: options.pool };
  } else if (options.pglite !== undefined) {
    database = { kind: 'pglite', pglite: options.pglite };
  } else if (env.DATABASE_URL) {
    database = {
      kind: 'connectionString',
      connectionString: checkConnectionString(env.DATABASE_URL, 'DATABASE_URL'),
    };
  } else {
    database = implicitInMemory(env);
  }

  const schema = options.schema ?? DEFAULTS.schema;
  if (typeof schema !== 'string' || !isValidSchemaName(schema)) {
    throw invalid(
      `schema ${JSON.stringify(schema)} is not a plain Postgres identifier; use letters, digits, _ and $, starting with a letter or _, at most 63 characters.`,
    );
  }
  checkKeyHashSecret(options.telemetry ?? {}, env);
  const leaseSeconds = checkSeconds('leaseSeconds', options.leaseSeconds, DEFAULTS.leaseSeconds, 0.05);
  const poolSize = options.poolSize ?? DEFAULTS.poolSize;
  if (!Number.isInteger(poolSize) || poolSize < 1)
    throw invalid(`poolSize must be a positive integer, got ${poolSize}.`);

  return Object.freeze({
    database,
    schema,
    ttlSeconds: checkSeconds('ttlSeconds', options.ttlSeconds, DEFAULTS.ttlSeconds, 0, MAX_TTL_SECONDS),
    leaseSeconds,
    waitSeconds: checkSeconds('waitSeconds', options.waitSeconds, DEFAULTS.waitSeconds, 0),
    migrate: options.migrate ?? true,
    layout: checkLayoutOption(options.layout),
    partitionWidthSeconds: checkSeconds(
      'partitionWidthSeconds',
      options.partitionWidthSeconds,
      DEFAULTS.partitionWidthSeconds,
      1,
      MAX_TTL_SECONDS,
    ),
    poolSize,
    connectTimeoutSeconds: checkSeconds(
      'connectTimeoutSeconds',
      options.connectTimeoutSeconds,
      DEFAULTS.connectTimeoutSeconds,
      0,
    ),
    statementTimeoutSeconds: checkSeconds(
      'statementTimeoutSeconds',
      options.statementTimeoutSeconds,
      DEFAULTS.statementTimeoutSeconds,
      0,
    ),
    queryTimeoutSeconds: checkSeconds(
      'queryTimeoutSeconds',
      options.queryTimeoutSeconds,
      DEFAULTS.queryTimeoutSeconds,
      0,
    ),
    maxUnsavedResults: checkCount('maxUnsavedResults', options.maxUnsavedResults, DEFAULTS.maxUnsavedResults),
    maxUnsavedResultBytes: checkCount(
      'maxUnsavedResultBytes',
      options.maxUnsavedResultBytes,
      DEFAULTS.maxUnsavedResultBytes,
    ),
    preparedStatements: options.preparedStatements ?? true,
    replayCacheEntries: checkCount(
      'replayCacheEntries',
      options.replayCacheEntries,
      DEFAULTS.replayCacheEntries,
    ),
    replayCacheMaxBytes: checkCount(
      'replayCacheMaxBytes',
      options.replayCacheMaxBytes,
      DEFAULTS.replayCacheMaxBytes,
    ),
    telemetry: options.telemetry ?? {},
  });
}

const TOOL_NAME = /^[\p{L}\p{N}_.\-:/]{1,128}$/u;
const KINDS: readonly ToolKind[] = ['read', 'mutation', 'job'];

/** One tool's settings with every default resolved. Internal. */
export interface ResolvedToolConfig {
  readonly name: string;
  readonly kind: ToolKind;
  readonly description: string | undefined;
  readonly title: string | undefined;
  readonly destructive: boolean;
  readonly input: StandardSchemaV1 | undefined;
  readonly handler: (input: unknown, ctx: HandlerContext) => unknown;
  readonly leaseSeconds: number;
  readonly waitMs: number;
  readonly ttlSeconds: number;
  readonly volatileFields: readonly string[];
  readonly transactional: boolean;
  readonly isFinalError: (error: unknown) => boolean;
  /** Whether a claim may take over a lapsed lease (jobs may opt out with `resumeAbandoned: false`). */
  readonly allowLeaseTakeover: boolean;
  readonly onUnknown: UnknownOutcomeRule<UnknownRunContext, unknown>;
}

const never = () => false;

/** Checks a tool definition and resolves its defaults against the ledger's, frozen. */
export function resolveToolConfig(
  definition: ToolOptions<StandardSchemaV1 | undefined, unknown>,
  ledger: ResolvedConfig,
): ResolvedToolConfig {
  if (definition === null || typeof definition !== 'object')
    throw invalid('ledger.tool() needs an options object.');
  if (typeof definition.name !== 'string' || !TOOL_NAME.test(definition.name)) {
    throw invalid(
      `Tool name ${JSON.stringify(definition?.name)} is invalid: use 1-128 letters, digits and _ . - : / (for example "create_invoice").`,
    );
  }
  const name = definition.name;
  checkKnown(`Tool "${name}"`, definition, TOOL_OPTION_NAMES);
  if (!KINDS.includes(definition.kind)) {
    throw invalid(
      `Tool "${name}" has kind ${JSON.stringify(definition.kind)}; use 'read', 'mutation' or 'job'.`,
    );
  }
  if (typeof definition.handler !== 'function') throw invalid(`Tool "${name}" needs a handler function.`);
  if (definition.input !== undefined && typeof definition.input?.['~standard']?.validate !== 'function') {
    throw invalid(`Tool "${name}": input must be a Standard Schema validator (zod 4, valibot, arktype).`);
  }
  if (definition.transactional && definition.kind !== 'mutation') {
    throw invalid(`Tool "${name}": transactional is only supported for kind 'mutation'.`);
  }
  const onUnknown = definition.onUnknown ?? 'rerun';
  if (onUnknown !== 'rerun' && onUnknown !== 'fail' && typeof onUnknown !== 'function') {
    throw invalid(
      `Tool "${name}" has onUnknown ${JSON.stringify(onUnknown)}; use 'rerun', 'fail' or a function that looks the outcome up.`,
    );
  }
  if (definition.onUnknown !== undefined && definition.kind === 'read') {
    throw invalid(`Tool "${name}": onUnknown is for mutations and jobs; a read tool has no outcome to lose.`);
  }
  return Object.freeze({
    name,
    kind: definition.kind,
    description: definition.description,
    title: definition.title,
    destructive: definition.destructive ?? false,
    input: definition.input,
    handler: definition.handler as ResolvedToolConfig['handler'],
    leaseSeconds: checkSeconds(`${name}.leaseSeconds`, definition.leaseSeconds, ledger.leaseSeconds, 0.05),
    waitMs: checkSeconds(`${name}.waitSeconds`, definition.waitSeconds, ledger.waitSeconds, 0) * 1000,
    ttlSeconds: checkSeconds(
      `${name}.ttlSeconds`,
      definition.ttlSeconds,
      ledger.ttlSeconds,
      0,
      MAX_TTL_SECONDS,
    ),
    volatileFields: Object.freeze([...(definition.volatileFields ?? [])]),
    transactional: definition.transactional === true,
    isFinalError: definition.isFinalError ?? never,
    allowLeaseTakeover: definition.kind !== 'job' || definition.resumeAbandoned !== false,
    onUnknown,
  });
}

export const PURGE_DEFAULTS = Object.freeze({ batchSize: 1000, maxRowsPerSecond: 25_000 });
export const CLOSE_DEFAULTS = Object.freeze({ timeoutSeconds: 10 });

/** `purgeExpired()` options with defaults resolved. */
export function resolveBatchSize(batchSize: number | undefined): number {
  const size = batchSize ?? PURGE_DEFAULTS.batchSize;
  if (!Number.isInteger(size) || size < 1)
    throw invalid(`batchSize must be a positive integer, got ${size}.`);
  return size;
}

/** `purgeExpired()`'s rate cap, defaults resolved: a positive number of rows per second, or `Infinity`. */
export function resolvePurgeRate(maxRowsPerSecond: number | undefined): number {
  const rate = maxRowsPerSecond ?? PURGE_DEFAULTS.maxRowsPerSecond;
  if (typeof rate !== 'number' || Number.isNaN(rate) || rate <= 0) {
    throw invalid(
      `maxRowsPerSecond must be a positive number of rows per second (Infinity for no cap), got ${String(rate)}.`,
    );
  }
  return rate;
}

/** `close()`'s timeout in milliseconds, defaults resolved. */
export function resolveCloseTimeoutMs(timeoutSeconds: number | undefined): number {
  return checkSeconds('timeoutSeconds', timeoutSeconds, CLOSE_DEFAULTS.timeoutSeconds, 0) * 1000;
}

export const GATEWAY_DEFAULTS = Object.freeze({ sessionIdleTimeoutMs: 30 * 60 * 1000 });

/**
 * The gateway's HTTP session idle timeout in milliseconds, defaults resolved: 0 keeps idle sessions open; otherwise
 * at most the longest timer Node can set.
 */
export function resolveSessionIdleTimeoutMs(value: number | undefined): number {
  const ms = value ?? GATEWAY_DEFAULTS.sessionIdleTimeoutMs;
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_TIMER_SECONDS * 1000) {
    throw invalid(
      `sessionIdleTimeoutMs must be a whole number of milliseconds from 0 (never) to ${MAX_TIMER_SECONDS * 1000}, got ${String(value)}.`,
    );
  }
  return ms;
}
