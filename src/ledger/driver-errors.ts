import { ToolLedgerError } from '../contract/errors.js';

/**
 * Failures some part of the ledger handles by itself, beyond retrying: a settings table not there yet (before
 * migration 4), a user without the right to it, a prepared statement a pooler lost between connections, and a
 * statement canceled by `statement_timeout` (a purge batch says why it may have run long).
 */
export const FAILURE_CONDITIONS = [
  'undefined_table',
  'insufficient_privilege',
  'statement_lost',
  'query_canceled',
] as const;
export type FailureCondition = (typeof FAILURE_CONDITIONS)[number];

/**
 * What a driver failure means for the caller: try again later, or fix something first. The one place that reads
 * SQLSTATEs, Node error codes and pg's messages; everything else asks it.
 */
export interface DriverFailure {
  readonly retryable: boolean;
  /** For permanent failures: what to change before a retry can succeed. */
  readonly fix?: string;
  /**
   * True when the server may have carried out the statement before the answer was lost (the connection broke
   * after it was sent), so "nothing happened" cannot be assumed. A SQLSTATE from the server is a definite answer.
   */
  readonly outcomeUnknown: boolean;
  /**
   * The server rolled the transaction back (SQLSTATE class 40 or 23), so a COMMIT that failed this way is a
   * definite answer, not an unknown outcome.
   */
  readonly rolledBack?: boolean;
  readonly condition?: FailureCondition;
  /** For retryable failures: what most likely happened, when it is more than "unreachable or busy". */
  readonly reason?: string;
}

const TRANSIENT: DriverFailure = { retryable: true, outcomeUnknown: false };
const LOST: DriverFailure = { retryable: true, outcomeUnknown: true };
const permanent = (fix: string, condition?: FailureCondition): DriverFailure =>
  condition === undefined
    ? { retryable: false, fix, outcomeUnknown: false }
    : { retryable: false, fix, outcomeUnknown: false, condition };
const ROLLED_BACK_TRANSIENT: DriverFailure = { ...TRANSIENT, rolledBack: true };
/** Serialization failures and deadlocks: the server gave up on this statement's transaction, not on the database. */
const CONFLICTED: DriverFailure = {
  ...ROLLED_BACK_TRANSIENT,
  reason:
    'Another session changed the same rows at the same moment (a key claimed, purged or moved by hand), and the server rolled this statement back, so nothing of it was saved',
};
const POOLER =
  'A pooler in transaction mode (PgBouncer before 1.21, RDS Proxy, Supavisor) lost a prepared statement between connections: pass preparedStatements: false';

const MIGRATE =
  'The ledger schema is missing or older than this version: let createLedger migrate (migrate: true) or apply ledger.migrationSql() as the DBA';

/** Exact SQLSTATEs, checked before their class. */
const SQLSTATE: Readonly<Record<string, DriverFailure>> = {
  '57P01': TRANSIENT, // admin_shutdown: a restart or pg_terminate_backend
  '57P02': TRANSIENT, // crash_shutdown
  '57P03': TRANSIENT, // cannot_connect_now: starting up or shutting down
  '57P05': TRANSIENT, // idle_session_timeout
  '57014': { ...TRANSIENT, condition: 'query_canceled' }, // statement_timeout or a cancel
  '57P04': permanent('The database was dropped: point the ledger at an existing database'),
  '53300': TRANSIENT, // too_many_connections
  '53400': permanent('A configured limit was exceeded: raise it on the server or lower poolSize'),
  '40001': CONFLICTED, // serialization_failure
  '40P01': CONFLICTED, // deadlock_detected
  '55P03': TRANSIENT, // lock_not_available (lock_timeout)
  '25P03': TRANSIENT, // idle_in_transaction_session_timeout ended the session
  '42P01': permanent(MIGRATE, 'undefined_table'),
  // A named statement Postgres already has (Parse) or never had (Bind): refused before anything ran.
  '42P05': permanent(POOLER, 'statement_lost'),
  '26000': permanent(POOLER, 'statement_lost'),
  '42703': permanent(MIGRATE),
  '42883': permanent(MIGRATE),
  '3F000': permanent(MIGRATE),
  '42501': permanent(
    "The database user lacks a privilege on the ledger's schema: GRANT USAGE and CREATE on the schema and SELECT, INSERT, UPDATE, DELETE on its tables",
    'insufficient_privilege',
  ),
  '3D000': permanent('The database does not exist: fix the database name in the connection string'),
  '28000': permanent('The server refused this user: fix the user or pg_hba.conf'),
  '28P01': permanent('The password was refused: fix the credentials in the connection string'),
};

/** SQLSTATE classes (the first two characters), when no exact code matched. */
const SQLSTATE_CLASS: Readonly<Record<string, DriverFailure>> = {
  '08': LOST, // connection_exception: the statement may or may not have reached the server
  '53': TRANSIENT, // insufficient_resources: disk full, out of memory, too many connections
  '40': ROLLED_BACK_TRANSIENT, // transaction_rollback
  '42': permanent(
    'The server rejected a ledger statement: check that the schema belongs to this tool-ledger version',
  ),
  '22': permanent('The server rejected a value: report this with the error as a tool-ledger bug'),
  '23': {
    ...permanent('A constraint refused the write: check for manual changes to the ledger table'),
    rolledBack: true,
  },
  '25': TRANSIENT, // invalid_transaction_state: the transaction was aborted; a new one may succeed
  '28': permanent('Authentication failed: fix the credentials in the connection string'),
  // Citus's refusals carry this class too: told apart above (citusFailure).
  '0A': permanent(
    'The server does not support a feature the ledger needs: use PostgreSQL 13 or later, or turn off preparedStatements behind a pooler',
  ),
};

/**
 * Citus's own refusals and faults, told apart from PostgreSQL's by their text (Citus reuses PostgreSQL's
 * SQLSTATEs): a statement the coordinator will not route or run on distributed tables (0A000), and a worker the
 * coordinator could not reach (class 08, which the coordinator reports while it still answers).
 */
const CITUS_REFUSAL =
  /distributed|router planner|non-IMMUTABLE functions are not allowed|functions used in (UPDATE|the WHERE|the DO UPDATE)|STABLE functions used in UPDATE|reference table|\bshard/i;
const CITUS_REFUSED: DriverFailure = permanent(
  "Citus refused a ledger statement on a distributed table: the ledger sends statements Citus can route only to a schema it distributed itself, which it records in the schema's settings. Run `tool-ledger migrate --distribute` once on the coordinator (it keeps tables already placed as the ledger needs them and records the distribution), then restart the ledger's processes; if the schema was distributed that way already, report this with the error as a tool-ledger bug",
);
const CITUS_NODE =
  /connection to the remote node|remote node .* failed|could not connect to (the )?(worker|node)/i;
const CITUS_WORKER_LOST: DriverFailure = {
  ...LOST,
  reason:
    "The Citus coordinator could not reach the worker that holds this tenant's shard, so the statement may or may not have run there; tenants on other workers are not affected",
};

function citusFailure(code: string, error: unknown): DriverFailure | undefined {
  const message = error instanceof Error ? error.message : '';
  if (code === '0A000' && CITUS_REFUSAL.test(message)) return CITUS_REFUSED;
  if (code.startsWith('08') && CITUS_NODE.test(message)) return CITUS_WORKER_LOST;
  return undefined;
}

/** Node socket and DNS errors: the database was not reachable, or stopped answering. */
const NODE_CODE: Readonly<Record<string, DriverFailure>> = {
  ECONNREFUSED: TRANSIENT,
  EHOSTUNREACH: TRANSIENT,
  ENETUNREACH: TRANSIENT,
  EAI_AGAIN: TRANSIENT,
  ECONNRESET: LOST,
  ETIMEDOUT: LOST,
  EPIPE: LOST,
  ECONNABORTED: LOST,
  ENOTFOUND: permanent('The database host name does not resolve: fix the host in the connection string'),
};

/** pg's own errors carry no code; their messages are stable across pg 8.x. */
const PG_MESSAGES: ReadonlyArray<readonly [RegExp, DriverFailure]> = [
  [/timeout exceeded when trying to connect/i, TRANSIENT],
  [/Connection terminated/i, LOST],
  [/Client has encountered a connection error/i, LOST],
  [/Query read timeout/i, LOST],
  [/Client was closed and is not queryable/i, LOST],
  [/Connection ended unexpectedly/i, LOST],
];

const UNKNOWN: DriverFailure = permanent(
  'An unexpected error came from the database driver: check the cause; a retry with the same key is safe',
);

/** Classifies a driver failure once, by SQLSTATE, then SQLSTATE class, then Node error code, then pg's text. */
export function classifyDriverError(error: unknown): DriverFailure {
  if (error instanceof ToolLedgerError) {
    return { retryable: error.retryable, outcomeUnknown: false };
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    const known = citusFailure(code, error) ?? SQLSTATE[code] ?? NODE_CODE[code];
    if (known) return known;
    if (/^[0-9A-Z]{5}$/.test(code)) return SQLSTATE_CLASS[code.slice(0, 2)] ?? UNKNOWN;
  }
  const message = error instanceof Error ? error.message : String(error);
  for (const [pattern, failure] of PG_MESSAGES) if (pattern.test(message)) return failure;
  return UNKNOWN;
}

/** True when a ledger statement failed in a way that leaves open whether the server carried it out. */
export function isOutcomeUnknown(error: unknown): boolean {
  const cause = error instanceof ToolLedgerError ? error.cause : error;
  return (
    cause !== undefined && !(cause instanceof ToolLedgerError) && classifyDriverError(cause).outcomeUnknown
  );
}

function describe(error: unknown): string {
  const detail = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && !detail.includes(code) ? `${detail} [${code}]` : detail;
}

/**
 * Wraps a driver failure in `LEDGER_UNAVAILABLE`, keeping the original as `cause`. Retryable only when the
 * condition is transient; a permanent one says what to fix.
 */
export function ledgerUnavailable(error: unknown, doing: string): ToolLedgerError {
  if (error instanceof ToolLedgerError) return error;
  const failure = classifyDriverError(error);
  const message = failure.retryable
    ? `The ledger could not ${doing}: ${describe(error)}. ${failure.reason ?? 'The database is unreachable or busy'}; retry with the same idempotency key in a moment.`
    : `The ledger could not ${doing}: ${describe(error)}. ${failure.fix}. Retrying will not help until that is fixed.`;
  return new ToolLedgerError('LEDGER_UNAVAILABLE', message, {
    cause: error,
    retryable: failure.retryable,
  });
}
