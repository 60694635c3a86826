import pg from 'pg';
import { ToolLedgerError } from '../contract/errors.js';
import type { Queryable } from '../contract/types.js';
import { multiHostTarget, urlHasPassword } from '../ledger/drivers/connection-url.js';
import { pgConnectOptions } from '../ledger/drivers/pg-connect.js';
import type { PurgeConnection } from '../ledger/purge.js';
import { isValidSchemaName } from '../ledger/sql/names.js';
import { tableExistsSql } from '../support/sql.js';
import { CliError, EXIT, maskDatabaseUrl, usageError } from './cli-error.js';

export interface Db {
  query<R>(text: string, params?: unknown[]): Promise<R[]>;
  /** BEGIN, `fn`, COMMIT on the one client (ROLLBACK when `fn` throws). */
  transaction<T>(fn: (tx: Pick<Db, 'query'>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface Connection {
  readonly databaseUrl: string;
  readonly schema: string;
}

/** Whether a connection string holds a password (postgres://u:p@h, a host list's u:p@h1,h2, or ?password=...). */
export function hasPassword(connectionString: string): boolean {
  try {
    const url = new URL(connectionString);
    return url.password !== '' || url.searchParams.has('password');
  } catch {
    return urlHasPassword(connectionString) ?? /(^|\s)password\s*=/i.test(connectionString);
  }
}

export function resolveConnection(
  values: { 'database-url'?: string | undefined; schema?: string | undefined },
  env: NodeJS.ProcessEnv,
): Connection {
  const fromArgv = values['database-url'];
  if (fromArgv !== undefined && hasPassword(fromArgv)) {
    throw usageError(
      '--database-url carries a password, which every user of this machine can read in ps. Put it in PGPASSWORD (or the whole URL in DATABASE_URL) and pass --database-url without it.',
    );
  }
  const databaseUrl = fromArgv ?? env.DATABASE_URL;
  if (!databaseUrl) {
    throw usageError(
      'No database given: set DATABASE_URL or pass --database-url postgres://user@host:5432/db.',
    );
  }
  try {
    // A host list or target_session_attrs the ledger cannot use is a mistake on the command line, said now.
    multiHostTarget(databaseUrl, env);
  } catch (error) {
    if (!(error instanceof ToolLedgerError)) throw error;
    throw usageError(`${fromArgv === undefined ? 'DATABASE_URL' : '--database-url'}: ${error.message}`);
  }
  const schema = values.schema ?? 'tool_ledger';
  if (!isValidSchemaName(schema)) {
    throw usageError(
      `--schema ${JSON.stringify(schema)} is not a plain Postgres identifier (letters, digits, _ and $, at most 63).`,
    );
  }
  return { databaseUrl, schema };
}

export async function connect(connection: Connection): Promise<Db> {
  // One client, not a pool: every command is a short sequence of statements.
  // A host list gets a client class that walks it (target_session_attrs, connect_timeout per host).
  const { Client = pg.Client, ...options } = pgConnectOptions(pg.Client, connection.databaseUrl, 10_000);
  const client = new Client(options);
  // Without a listener, a server-side disconnect between statements would crash the process.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    throw new CliError(
      `Could not connect to ${maskDatabaseUrl(connection.databaseUrl)}: ${error instanceof Error ? error.message : String(error)}`,
      EXIT.FAILURE,
      { cause: error },
    );
  }
  const query = async <R>(text: string, params?: unknown[]) => (await client.query(text, params)).rows as R[];
  return {
    query,
    async transaction(fn) {
      await client.query('BEGIN');
      try {
        const result = await fn({ query });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    },
    close: () => client.end(),
  };
}

/** The CLI's connection in the shape the ledger's own helpers take. */
export function queryable(db: Db): Queryable {
  return {
    query: async <R>(text: string, params?: unknown[]) => ({ rows: await db.query<R>(text, params) }),
  };
}

/** The CLI's one client as a purge needs it: a transaction is BEGIN and COMMIT on that client. */
export function purgeConnection(db: Db): PurgeConnection {
  const query = queryable(db);
  return {
    ...query,
    async transaction(fn) {
      await db.query('BEGIN');
      try {
        const result = await fn(query);
        await db.query('COMMIT');
        return result;
      } catch (error) {
        await db.query('ROLLBACK').catch(() => {});
        throw error;
      }
    },
  };
}

/** Commands that read the ledger say "run migrate" when there is nothing to read. */
export async function requireLedgerTable(db: Db, schema: string): Promise<void> {
  const [row] = await db.query<{ exists: boolean }>(tableExistsSql, [schema]);
  if (!row?.exists) {
    throw new CliError(
      `Schema "${schema}" has no tool_runs table. Check --schema, or create it with \`tool-ledger migrate --schema ${schema}\`.`,
    );
  }
}
