// Public API of `tool-ledger/console`: the ledger console, a web UI served from the ledger database. Every export
// here is public and follows semver.
import pg from 'pg';
import { ToolLedgerError } from '../contract/errors.js';
import { maskUrlPassword } from '../ledger/drivers/connection-url.js';
import { pgConnectOptions } from '../ledger/drivers/pg-connect.js';
import type { SupportDb } from '../support/db.js';
import { readAccessSql } from '../support/explorer-sql.js';
import { tableExistsSql } from '../support/sql.js';
import { ConsoleApprovals } from './approvals.js';
import { explorerWritesRefused } from './explorer-reads.js';
import { type ConsoleOptions, resolveConsoleOptions } from './options.js';
import { listenConsole } from './server.js';

export type { TokenVerification } from '../auth/jwt.js';
export {
  type ConsoleAuth,
  type ConsoleJwt,
  type ConsoleOptions,
  type ConsoleRole,
  type ConsoleToken,
  isLoopback,
  parseTokens,
} from './options.js';

/** A running console. */
export interface RunningConsole {
  /** Where it listens, for example http://127.0.0.1:4320/. */
  readonly url: URL;
  /** Whether operators may decide here (`allowWrites`, and an identity to record). */
  readonly writable: boolean;
  /** Stops listening and closes the database pool. */
  close(): Promise<void>;
}

/**
 * Starts the ledger console: search, run pages with steps, audit and trace timeline, the inboxes of what needs a
 * person, and an overview. Read-only unless `allowWrites`; without `auth` it listens on loopback only.
 */
export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  const resolved = resolveConsoleOptions(options);
  const { Client = pg.Client, ...connect } = pgConnectOptions(
    pg.Client,
    resolved.connectionString,
    10_000,
    resolved.env,
  );
  const writable = resolved.allowWrites && (resolved.auth !== undefined || resolved.operator !== undefined);
  // A read-only console cannot write even through a bug; every statement is bounded in time.
  const pool = new pg.Pool({
    ...connect,
    Client,
    max: 4,
    idleTimeoutMillis: 30_000,
    options: `-c statement_timeout=15000${writable ? '' : ' -c default_transaction_read_only=on'}`,
  });
  pool.on('error', () => {});
  const db: SupportDb = {
    query: async <R>(text: string, params?: unknown[]) => (await pool.query(text, params)).rows as R[],
    // A decision and its audit entries on one connection of the pool, committed together.
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn({
          query: async <R>(text: string, params?: unknown[]) =>
            (await client.query(text, params)).rows as R[],
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
  };
  // The explorer's schema when the role may read only its view (postgres/explorer.sql): pages then read that.
  let explorer: string | undefined;
  try {
    const [access] = await db.query<{ ledger: boolean; explorer: string | null }>(readAccessSql, [
      resolved.schema,
    ]);
    if (!access?.ledger && access?.explorer) {
      if (writable) throw explorerWritesRefused();
      explorer = access.explorer;
    } else {
      const [row] = await db.query<{ exists: boolean }>(tableExistsSql, [resolved.schema]);
      if (!row?.exists || !access?.ledger) {
        throw new ToolLedgerError(
          'CONFIG_INVALID',
          `Schema "${resolved.schema}" has no tool_runs table this role may read. Check the schema, create it with \`tool-ledger migrate --schema ${resolved.schema}\`, grant SELECT on its tables, or connect as the explorer's read-only role (postgres/explorer.sql).`,
        );
      }
    }
  } catch (error) {
    await pool.end().catch(() => {});
    if (error instanceof ToolLedgerError) throw error;
    throw new ToolLedgerError(
      'LEDGER_UNAVAILABLE',
      `The console cannot reach ${maskUrlPassword(resolved.connectionString, '***') ?? 'the database'}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  // The approvals inbox goes through the ledger's public API, on this pool.
  const approvals =
    explorer === undefined
      ? await ConsoleApprovals.open(pool, resolved.schema)
      : ConsoleApprovals.unavailable(
          "Approvals cannot be read here: this database role reads only the explorer's view, which has no approvals.",
        );
  let listening: Awaited<ReturnType<typeof listenConsole>>;
  try {
    listening = await listenConsole(resolved, db, approvals, explorer);
  } catch (error) {
    await approvals.close().catch(() => {});
    await pool.end().catch(() => {});
    throw error;
  }
  return {
    url: listening.url,
    writable,
    async close() {
      await listening.close();
      await approvals.close().catch(() => {});
      await pool.end().catch(() => {});
    },
  };
}
