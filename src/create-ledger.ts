import type { StandardSchemaV1 } from '@standard-schema/spec';
import { publicConfig, type ResolvedConfig, resolveConfig } from './config/ledger.js';
import {
  checkSeconds,
  MAX_TTL_SECONDS,
  resolveBatchSize,
  resolveCloseTimeoutMs,
  resolvePurgeRate,
} from './config/limits.js';
import type { LedgerOptions } from './config/options.js';
import type {
  ApprovalDecision,
  ApproveRequest,
  AwaitingApproval,
  DeclineRequest,
  ListApprovalsOptions,
} from './contract/approval.js';
import { omitTreeOf } from './contract/canonical-json.js';
import { ToolLedgerError } from './contract/errors.js';
import { noopObserver } from './contract/observer.js';
import type {
  CallInputOf,
  JobStatus,
  JsonForm,
  ToolOptions,
  TransactionalHandlerContext,
} from './contract/types.js';
import { distributionScript } from './ledger/citus-sql.js';
import { distributeLedger } from './ledger/distribute.js';
import type { Driver } from './ledger/driver.js';
import { ledgerUnavailable } from './ledger/driver-errors.js';
import { maskUrlPassword } from './ledger/drivers/connection-url.js';
import type { PgPoolLike } from './ledger/drivers/pg/client.js';
import { pgDriver } from './ledger/drivers/pg/pg-driver.js';
import { pgConnectOptions } from './ledger/drivers/pg-connect.js';
import { openInMemoryLedgerDb, openPGlite, pgliteDriver } from './ledger/drivers/pglite.js';
import { applyMigrations } from './ledger/migrate.js';
import { ledgerApplicationName, migrationScript } from './ledger/migrations.js';
import { CompletionNotifier } from './ledger/notifier.js';
import {
  applyLayoutMigrations,
  checkLayout,
  partitionedMigrationScript,
  readStoredLayout,
  type StoredLayout,
} from './ledger/partitioned.js';
import { ensureAheadSql } from './ledger/partitioned-sql.js';
import { warnAboutAsyncStandbys } from './ledger/replication.js';
import { loadDeploymentSecret } from './ledger/settings.js';
import { LedgerStore } from './ledger/store.js';
import { approvalDesk, type RegisteredTool } from './middleware/approval-desk.js';
import { LedgerRuntime } from './middleware/runtime.js';
import { createTool, type LedgerTool } from './middleware/tool.js';
import { configuredSecret, type DeploymentSecret } from './telemetry/key-secret.js';
import { createOtelObserver } from './telemetry/observer.js';

export interface PurgeOptions {
  /**
   * Rows deleted per statement; small batches keep locks short on large tables.
   * @default 1000
   */
  readonly batchSize?: number;
  /**
   * At most this many rows deleted per second, on average over the purge: it sleeps between batches to hold the
   * rate. Deleting as fast as the server allows took 26% of live calls' throughput on a 2-core machine; at this
   * cap it still purges a million rows in 40 s (docs/performance.md, "Purging and bloat"). `Infinity` for no cap.
   * @default 25000
   */
  readonly maxRowsPerSecond?: number;
  /** Called after each batch with the running total. */
  readonly onProgress?: (deletedSoFar: number) => void;
  /**
   * Partitioned layout only: how long after a partition's range ended it is kept before it is dropped (rows
   * past their TTL still there for support to read). The table layout deletes rows as soon as they expire.
   * @default 0
   */
  readonly graceSeconds?: number;
}

export interface CloseOptions {
  /**
   * How long to wait for handlers and jobs still running.
   * @default 10
   */
  readonly timeoutSeconds?: number;
}

export interface Ledger {
  /**
   * The resolved, frozen configuration, free of secrets so that it can be logged: `telemetry.keyHashSecret` reads
   * `'[REDACTED]'` and a connection string's password is masked.
   */
  readonly config: ResolvedConfig;
  /** Wraps a handler. Mutations and jobs go through the ledger; read tools only get telemetry. */
  tool<TSchema extends StandardSchemaV1 | undefined = undefined, TOutput = unknown>(
    options: ToolOptions<TSchema, TOutput, TransactionalHandlerContext> & {
      readonly kind: 'mutation';
      readonly transactional: true;
    },
  ): LedgerTool<CallInputOf<TSchema>, JsonForm<TOutput>, 'mutation'>;
  tool<TSchema extends StandardSchemaV1 | undefined = undefined, TOutput = unknown>(
    options: ToolOptions<TSchema, TOutput> & { readonly kind: 'job' },
  ): LedgerTool<CallInputOf<TSchema>, JobStatus<JsonForm<TOutput>>, 'job'>;
  tool<TSchema extends StandardSchemaV1 | undefined = undefined, TOutput = unknown>(
    options: ToolOptions<TSchema, TOutput> & { readonly kind: 'mutation' },
  ): LedgerTool<CallInputOf<TSchema>, JsonForm<TOutput>, 'mutation'>;
  /** Read tools return the handler's value as it is: it is never stored. */
  tool<TSchema extends StandardSchemaV1 | undefined = undefined, TOutput = unknown>(
    options: ToolOptions<TSchema, TOutput> & { readonly kind: 'read' },
  ): LedgerTool<CallInputOf<TSchema>, TOutput, 'read'>;
  tool<TSchema extends StandardSchemaV1 | undefined = undefined, TOutput = unknown>(
    options: ToolOptions<TSchema, TOutput>,
  ): LedgerTool<CallInputOf<TSchema>, unknown>;
  /**
   * Approves a call awaiting approval (a tool's `approval` option): the next call with its key and arguments runs
   * the handler once, with `arguments` when the approver edited them. One decision wins a race; the loser gets
   * `APPROVAL_ALREADY_DECIDED` naming the winner. Audited (docs/ledger.md, "Approvals").
   */
  approve(request: ApproveRequest): Promise<ApprovalDecision>;
  /** Declines a call awaiting approval: final, every call with its key answers `APPROVAL_DECLINED` with the reason. */
  decline(request: DeclineRequest): Promise<ApprovalDecision>;
  /** The calls awaiting a decision (the inbox), oldest first, arguments raw: scrub them before showing them. */
  readonly approvals: {
    list(options?: ListApprovalsOptions): Promise<AwaitingApproval[]>;
  };
  /** Deletes rows past their TTL, in batches. Returns how many rows went. */
  purgeExpired(options?: PurgeOptions): Promise<number>;
  /** The migration SQL for this ledger's schema, for DBAs who apply it by hand. */
  migrationSql(): string;
  /**
   * Refuses new calls, waits for calls and background jobs in flight (up to `timeoutSeconds`; handlers still
   * running then see `ctx.signal` abort and their leases lapse), then closes what the ledger opened.
   */
  close(options?: CloseOptions): Promise<void>;
}

/** A driver, and for the embedded default what to do once the migrations ran (save them for the next start). */
interface OpenedDriver {
  readonly driver: Driver;
  readonly afterMigrations?: (() => Promise<void>) | undefined;
}

async function openDriver(config: ResolvedConfig): Promise<OpenedDriver> {
  const db = config.database;
  try {
    switch (db.kind) {
      case 'pool':
        return {
          driver: pgDriver(db.pool, {
            ownsPool: false,
            preparedStatements: config.preparedStatements,
            answerTimeoutMs: (config.connectTimeoutSeconds + config.queryTimeoutSeconds) * 1000,
          }),
        };
      case 'connectionString': {
        const pg = await import('pg');
        const Pool = pg.default?.Pool ?? (pg as unknown as { Pool: typeof pg.default.Pool }).Pool;
        const Client = pg.default?.Client ?? (pg as unknown as { Client: typeof pg.default.Client }).Client;
        // One host: the string as it is. A host list: a client class that walks it, and a bound per host.
        const connect = pgConnectOptions(Client, db.connectionString, config.connectTimeoutSeconds * 1000);
        const pool = new Pool({
          ...connect,
          // Names the code's schema level and the schema (a URL's own application_name wins): migrate --check
          // reads it to tell which versions of the code hold connections.
          application_name: ledgerApplicationName(config.schema),
          max: config.poolSize,
          // pg reads 0 as "no timeout" for all three.
          query_timeout: config.queryTimeoutSeconds * 1000,
          statement_timeout: config.statementTimeoutSeconds * 1000,
          // A peer that vanished without a reset is found by the kernel's probes, not only by a timeout.
          keepAlive: true,
          keepAliveInitialDelayMillis: 10_000,
        });
        // An idle client's error (server restart) must not crash the process; the next query reports it.
        pool.on('error', () => {});
        return {
          driver: pgDriver(pool as unknown as PgPoolLike, {
            ownsPool: true,
            preparedStatements: config.preparedStatements,
            answerTimeoutMs: connect.connectionTimeoutMillis + config.queryTimeoutSeconds * 1000,
          }),
        };
      }
      case 'pglite': {
        if (db.pglite === undefined || db.pglite === 'memory://') {
          const opened = await openInMemoryLedgerDb(config.schema);
          return { driver: pgliteDriver(opened.db, true), afterMigrations: opened.saveMigrated };
        }
        if (typeof db.pglite === 'string') return { driver: pgliteDriver(await openPGlite(db.pglite), true) };
        return { driver: pgliteDriver(db.pglite, false) };
      }
    }
  } catch (error) {
    throw new ToolLedgerError(
      'LEDGER_UNAVAILABLE',
      `createLedger could not open the ledger database (${db.kind}): ${error instanceof Error ? error.message : String(error)}. Check the database option, then call createLedger again.`,
      { cause: error },
    );
  }
}

/**
 * A failure while opening the ledger, said as one: there is no call to retry yet, only the start-up. The driver's
 * own message ("retry it with the same idempotency key") speaks of calls.
 */
function startupFailure(error: unknown, config: ResolvedConfig): unknown {
  if (!(error instanceof ToolLedgerError) || error.code !== 'LEDGER_UNAVAILABLE') return error;
  const driverError = error.cause instanceof Error ? error.cause : error;
  const where =
    config.database.kind === 'connectionString'
      ? `the Postgres server of connectionString/DATABASE_URL (${maskedUrl(config.database.connectionString)})`
      : `the ${config.database.kind} you passed`;
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `createLedger could not start: ${where} failed while preparing schema "${config.schema}" (${driverError.message}). Check that the database is reachable and the address and credentials are right, then retry createLedger.`,
    { cause: error.cause ?? error },
  );
}

/** A connection string without its password, for messages (a URL with one host or several, or keywords). */
function maskedUrl(connectionString: string): string {
  return (
    maskUrlPassword(connectionString, '***') ??
    connectionString.replace(/password\s*=\s*\S+/gi, 'password=***')
  );
}

/**
 * The schema's layout, read before any migration. A table-layout ledger with `migrate: false` starts while the
 * database is down (its calls fail with LEDGER_UNAVAILABLE until it is back), as it did before layouts existed: a
 * transient failure of this read then skips the check instead of failing the start.
 */
async function storedLayoutAtStart(
  driver: Driver,
  config: ResolvedConfig,
): Promise<StoredLayout | undefined> {
  try {
    return await readStoredLayout(driver, config.schema);
  } catch (error) {
    const mayStartWithout = !config.migrate && config.layout === 'table';
    if (mayStartWithout && error instanceof ToolLedgerError && error.retryable) return undefined;
    throw error;
  }
}

/**
 * Opens a ledger: connects, applies pending migrations (unless `migrate: false`) and returns the tool factory.
 */
export async function createLedger(options: LedgerOptions = {}): Promise<Ledger> {
  const config = resolveConfig(options);
  const { driver, afterMigrations } = await openDriver(config);
  let deployment: DeploymentSecret | undefined;
  let distributed = false;
  try {
    const wanted = { layout: config.layout, widthSeconds: config.partitionWidthSeconds };
    const stored = await storedLayoutAtStart(driver, config);
    // Before any migration: the table layout's would fail on a partitioned table with a less helpful error.
    checkLayout(stored, wanted, config.schema, config.migrate);
    if (config.migrate) {
      if (config.layout === 'table') await applyMigrations(driver, config.schema);
      else await applyLayoutMigrations(driver, config.schema, wanted);
      // Before the key-hash secret is made: the saved start must not carry one.
      await afterMigrations?.();
    }
    // On Citus's coordinator, after the migrations (which run there too, as DDL Citus passes on to the shards).
    if (config.distribute) await distributeLedger(driver, config.schema);
    // Read once: the store picks its statements by it for the ledger's life.
    distributed = config.distribute || stored?.distributed === true;
    if (config.layout === 'partitioned') {
      // The partitions this process's claims will need, so none makes one (an exclusive lock) on the hot path.
      await driver
        .query(ensureAheadSql(config.schema), [config.ttlSeconds + 2 * config.partitionWidthSeconds])
        .catch((error: unknown) => {
          throw ledgerUnavailable(error, `make the partitions of schema "${config.schema}"`);
        });
    }
    // One statement at start: a failover to an asynchronous standby can run keys twice, so say so once.
    if (driver.kind === 'pg') await warnAboutAsyncStandbys(driver);
    // Before the ledger is handed out, so no call's span is keyed under anything else.
    if (config.telemetry !== false && configuredSecret(config.telemetry) === undefined) {
      deployment = await loadDeploymentSecret(driver, config.schema).catch((error: unknown) => {
        throw ledgerUnavailable(error, `read the key-hash secret of schema "${config.schema}"`);
      });
    }
  } catch (error) {
    await driver.close().catch(() => {});
    throw startupFailure(error, config);
  }
  const store = new LedgerStore(
    driver,
    config.schema,
    { maxEntries: config.replayCacheEntries, maxBytes: config.replayCacheMaxBytes },
    config.layout,
    distributed,
  );
  const notifier = new CompletionNotifier(store);
  const observer =
    config.telemetry === false ? noopObserver : createOtelObserver(config.telemetry, deployment);
  const runtime = new LedgerRuntime(config, store, notifier, observer);
  let closing: Promise<void> | undefined;
  const tools = new Map<string, RegisteredTool>();
  const desk = approvalDesk(runtime, tools);

  const ledger: Ledger = {
    // Without secrets: applications log it.
    config: publicConfig(config),
    tool: ((definition: ToolOptions<StandardSchemaV1 | undefined, unknown>) => {
      runtime.assertOpen(definition?.name ?? 'tool');
      const name = definition?.name;
      if (typeof name === 'string' && tools.has(name)) {
        throw new ToolLedgerError(
          'CONFIG_INVALID',
          `A tool named "${name}" is already registered on this ledger; tools share keys by name, so give each tool its own name.`,
        );
      }
      if (definition?.approval !== undefined && distributed) {
        throw new ToolLedgerError(
          'CONFIG_INVALID',
          `Tool "${name}": approval is not supported on a schema distributed with Citus. Use a ledger that is not distributed (another schema, the table or partitioned layout) for tools that need approvals.`,
        );
      }
      const created = createTool(runtime, definition);
      // The approval gauges exist only on a ledger with a tool that asks (docs/telemetry.md).
      if (definition.approval !== undefined) runtime.observeApprovals();
      tools.set(created.name, {
        input: created.input,
        volatile: omitTreeOf(definition.volatileFields ?? []),
        ttlSeconds: definition.ttlSeconds ?? config.ttlSeconds,
      });
      return created;
    }) as Ledger['tool'],
    approve: desk.approve,
    decline: desk.decline,
    approvals: Object.freeze({ list: desk.list }),
    async purgeExpired({ batchSize: requested, maxRowsPerSecond, onProgress, graceSeconds } = {}) {
      if (runtime.closed) {
        throw new ToolLedgerError(
          'LEDGER_CLOSED',
          'purgeExpired() was called after ledger.close(). Purge from a ledger that is open (or run it before closing).',
        );
      }
      const batchSize = resolveBatchSize(requested);
      const rate = resolvePurgeRate(maxRowsPerSecond);
      if (store.partitioned) {
        // Dropping a partition costs no row deletions: batches and the rate cap have nothing to pace.
        const grace = checkSeconds('graceSeconds', graceSeconds, 0, 0, MAX_TTL_SECONDS);
        const rows = await store.maintain(config.ttlSeconds + 2 * config.partitionWidthSeconds, grace);
        const dropped = rows
          .filter((r) => r.action === 'dropped')
          .reduce((sum, r) => sum + Number(r.row_count), 0);
        if (dropped > 0) onProgress?.(dropped);
        return dropped;
      }
      const started = performance.now();
      let total = 0;
      let sweep = await store.startPurge();
      for (;;) {
        const { deleted, next } = await store.purgeBatch(batchSize, sweep);
        total += deleted;
        if (deleted > 0) onProgress?.(total);
        if (next.kind === 'done') return total;
        sweep = next;
        // Ahead of the cap: wait until the rows deleted so far are due (at most one batch's worth of time).
        const aheadMs = (total / rate) * 1000 - (performance.now() - started);
        if (aheadMs > 0) await new Promise((resolve) => setTimeout(resolve, aheadMs));
      }
    },
    migrationSql: () =>
      config.layout === 'partitioned'
        ? partitionedMigrationScript(config.schema, config.partitionWidthSeconds)
        : config.distribute
          ? `${migrationScript(config.schema)}\n${distributionScript(config.schema)}`
          : migrationScript(config.schema),
    close({ timeoutSeconds }: CloseOptions = {}) {
      const timeoutMs = resolveCloseTimeoutMs(timeoutSeconds);
      closing ??= (async () => {
        await runtime.drain(timeoutMs);
        await notifier.close();
        await driver.close();
      })();
      return closing;
    },
  };
  return Object.freeze(ledger);
}
