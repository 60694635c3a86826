import { ToolLedgerError } from '../contract/errors.js';
import { PARTITIONED_NOT_DISTRIBUTABLE } from '../ledger/distribute.js';
import { isMultiHostUrl, maskUrlPassword, parseConnectionUrl } from '../ledger/drivers/connection-url.js';
import { isKeywordString, keywordStringToUrl } from '../ledger/drivers/keyword-string.js';
import type { PgPoolLike } from '../ledger/drivers/pg/client.js';
import type { PGliteLike } from '../ledger/drivers/pglite.js';
import { isValidSchemaName } from '../ledger/sql/names.js';
import type { TelemetryOptions } from '../telemetry/options.js';
import { REDACTED } from '../telemetry/redact/default-redactor.js';
import { KEY_HASH_SECRET_ENV } from '../telemetry/vocabulary.js';
import { checkCount, checkKnown, checkSeconds, invalid, MAX_TTL_SECONDS } from './limits.js';
import type { LedgerOptions } from './options.js';

// The ledger's options resolved in one place, checked and frozen (`resolveConfig`), and the view of them that
// `ledger.config` shows (`publicConfig`), free of secrets.

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
  readonly approvalTtlSeconds: number;
  readonly approvalWaitSeconds: number;
  readonly migrate: boolean;
  readonly layout: 'table' | 'partitioned';
  readonly partitionWidthSeconds: number;
  readonly distribute: boolean;
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
  approvalTtlSeconds: 86_400,
  approvalWaitSeconds: 0,
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

const LEDGER_OPTION_NAMES = {
  connectionString: true,
  pool: true,
  pglite: true,
  schema: true,
  ttlSeconds: true,
  leaseSeconds: true,
  waitSeconds: true,
  approvalTtlSeconds: true,
  approvalWaitSeconds: true,
  migrate: true,
  layout: true,
  partitionWidthSeconds: true,
  distribute: true,
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

/** `distribute: true` needs a migrating ledger of the table layout on a server that could have Citus. */
function checkDistribute(
  value: unknown,
  context: {
    readonly migrate: boolean;
    readonly layout: 'table' | 'partitioned';
    readonly database: DatabaseChoice;
  },
): boolean {
  if (value === undefined || value === false) return false;
  if (value !== true) throw invalid(`distribute must be true or false, got ${JSON.stringify(value)}.`);
  if (context.database.kind === 'pglite') {
    throw invalid(
      'distribute: true needs a Citus coordinator; PGlite is one embedded Postgres. Pass its connectionString or pool instead.',
    );
  }
  if (!context.migrate) {
    throw invalid(
      'distribute: true distributes the schema after the migrations, but migrate is false. Distribute it once with `tool-ledger migrate --distribute` (or the script of `--distribute --print-sql`), then open ledgers without distribute: they find it in the schema.',
    );
  }
  if (context.layout === 'partitioned') {
    throw invalid(`distribute: true with layout: 'partitioned': ${PARTITIONED_NOT_DISTRIBUTABLE}.`);
  }
  return true;
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
  const migrate = options.migrate ?? true;
  const layout = checkLayoutOption(options.layout);
  const poolSize = options.poolSize ?? DEFAULTS.poolSize;
  if (!Number.isInteger(poolSize) || poolSize < 1)
    throw invalid(`poolSize must be a positive integer, got ${poolSize}.`);

  return Object.freeze({
    database,
    schema,
    ttlSeconds: checkSeconds('ttlSeconds', options.ttlSeconds, DEFAULTS.ttlSeconds, 0, MAX_TTL_SECONDS),
    leaseSeconds,
    waitSeconds: checkSeconds('waitSeconds', options.waitSeconds, DEFAULTS.waitSeconds, 0),
    approvalTtlSeconds: checkSeconds(
      'approvalTtlSeconds',
      options.approvalTtlSeconds,
      DEFAULTS.approvalTtlSeconds,
      1,
      MAX_TTL_SECONDS,
    ),
    approvalWaitSeconds: checkSeconds(
      'approvalWaitSeconds',
      options.approvalWaitSeconds,
      DEFAULTS.approvalWaitSeconds,
      0,
    ),
    migrate,
    layout,
    distribute: checkDistribute(options.distribute, { migrate, layout, database }),
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
