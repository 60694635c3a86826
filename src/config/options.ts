import type { PgPoolLike } from '../ledger/drivers/pg/client.js';
import type { PGliteLike } from '../ledger/drivers/pglite.js';
import type { TelemetryOptions } from '../telemetry/options.js';

// The public options of `createLedger`, documented field by field: their defaults are resolved in ./ledger.ts.

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
   * How long a call awaiting approval (a tool's `approval` option) stays decidable, counted from the call that
   * asked. Past it the call answers `APPROVAL_EXPIRED`, for `ttlSeconds` more, and then the key counts as new.
   * @default 86400
   */
  readonly approvalTtlSeconds?: number;
  /**
   * How long a call of a tool with `approval` waits for the decision before answering `APPROVAL_REQUIRED`: on an
   * approval it runs the handler and returns its result, on a decline it answers `APPROVAL_DECLINED`. Bounded like
   * `waitSeconds`; 0 answers at once. A waiting call holds no connection (it listens on the ledger's one LISTEN
   * connection and polls as a fallback, so it works through a pooler and on the embedded PGlite).
   * @default 0
   */
  readonly approvalWaitSeconds?: number;
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
   * Distribute the schema by tenant with Citus when `createLedger` starts, on the coordinator, after the
   * migrations: the run tables by `tenant_id` (colocated), the settings and migration record as reference tables
   * (docs/operations.md, "Distributing by tenant"). Idempotent; refused with `CONFIG_INVALID` on a server without
   * Citus, with `migrate: false` (run `tool-ledger migrate --distribute` instead) and with `layout: 'partitioned'`.
   * A ledger opened without it on a schema distributed before finds that in the schema's settings and runs there
   * the same way.
   * @default false
   */
  readonly distribute?: boolean;
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
