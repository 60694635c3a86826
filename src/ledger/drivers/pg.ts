import { createHash } from 'node:crypto';
import type { Queryable } from '../../contract/types.js';
import type { Driver } from '../driver.js';
import { quoteIdent } from '../sql.js';

/** The parts of a `pg.PoolClient` used here, described structurally so any pg 8.x works. */
export interface PgClientLike extends Queryable {
  release(destroy?: boolean | Error): void;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeAllListeners?(event?: string): unknown;
}

/** The parts of a `pg.Pool` used here. */
export interface PgPoolLike extends Queryable {
  connect(): Promise<PgClientLike>;
  end(): Promise<void>;
}

interface ListenerConnection {
  readonly client: Pick<PgClientLike, 'query' | 'on'>;
  dispose(): Promise<void>;
}

type ClientConstructor = new (
  options: unknown,
) => Pick<PgClientLike, 'query' | 'on'> & {
  connect(): Promise<void>;
  end(): Promise<void>;
};

/**
 * LISTEN needs a connection of its own for as long as waiters exist. A `pg.Pool` exposes its client class and
 * options, so the listener is opened beside the pool rather than taking one of its clients (a pool of one would
 * otherwise deadlock its waiters); other pools lend a client.
 */
async function openListener(pool: PgPoolLike): Promise<ListenerConnection> {
  const { Client, options } = pool as { Client?: ClientConstructor; options?: unknown };
  if (typeof Client === 'function' && options) {
    const client = new Client(options);
    client.on('error', () => {});
    await client.connect();
    return { client, dispose: () => client.end() };
  }
  const client = await pool.connect();
  return {
    client,
    dispose: async () => client.release(true),
  };
}

/** A named statement runs on pg's extended protocol with the plan cached per connection. */
interface NamedQuery {
  readonly name: string;
  readonly text: string;
  readonly values: unknown[] | undefined;
}

function statementName(text: string): string {
  return `tool_ledger_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
}

export function pgDriver(pool: PgPoolLike, ownsPool: boolean, preparedStatements = true): Driver {
  const names = new Map<string, string>();
  const named = (text: string, values: unknown[] | undefined): NamedQuery => {
    let name = names.get(text);
    if (name === undefined) {
      name = statementName(text);
      names.set(text, name);
    }
    return { name, text, values };
  };
  let listener: Promise<ListenerConnection> | undefined;
  const handlers = new Map<string, Set<(payload: string) => void>>();

  const listenConnection = (): Promise<ListenerConnection> => {
    listener ??= openListener(pool).then(async (connection) => {
      connection.client.on('notification', (message) => {
        for (const handler of handlers.get(message.channel) ?? []) handler(message.payload ?? '');
      });
      // A broken listener only costs waiters their early wake-up (they fall back to backoff polling); the next
      // wait opens a new one and listens to every channel again.
      connection.client.on('error', () => {
        listener = undefined;
        connection.dispose().catch(() => {});
      });
      for (const channel of handlers.keys()) await connection.client.query(`LISTEN ${quoteIdent(channel)}`);
      return connection;
    });
    listener.catch(() => {
      listener = undefined;
    });
    return listener;
  };

  return {
    kind: 'pg',
    // The ledger's statements are few and fixed per schema, so preparing them once per connection saves Postgres
    // from parsing and planning the claim's CTE on every call.
    query: preparedStatements
      ? <R>(text: string, params?: unknown[]) =>
          (pool as unknown as { query(q: NamedQuery): Promise<{ rows: R[] }> }).query(named(text, params))
      : (text, params) => pool.query(text, params),
    async transaction(fn) {
      const client = await pool.connect();
      let broken: unknown;
      try {
        await client.query('BEGIN');
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken = rollbackError;
        }
        throw error;
      } finally {
        client.release(broken instanceof Error ? broken : undefined);
      }
    },
    async listen(channel, onNotify) {
      let set = handlers.get(channel);
      const isNew = set === undefined;
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
      }
      set.add(onNotify);
      const connection = await listenConnection();
      // LISTEN is idempotent, so a channel a fresh connection already listened to costs one no-op statement.
      if (isNew) await connection.client.query(`LISTEN ${quoteIdent(channel)}`);
      const registered = set;
      return async () => {
        registered.delete(onNotify);
      };
    },
    async close() {
      const connection = await listener?.catch(() => undefined);
      await connection?.dispose().catch(() => {});
      if (ownsPool) await pool.end();
    },
  };
}
