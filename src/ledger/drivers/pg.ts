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
  let listener: Promise<PgClientLike> | undefined;
  const handlers = new Map<string, Set<(payload: string) => void>>();

  const listenClient = (): Promise<PgClientLike> => {
    listener ??= pool.connect().then((client) => {
      client.on('notification', (message) => {
        for (const handler of handlers.get(message.channel) ?? []) handler(message.payload ?? '');
      });
      // A broken listener only costs waiters their early wake-up; they fall back to backoff polling.
      client.on('error', () => {
        listener = undefined;
        client.release(true);
      });
      return client;
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
      const client = await listenClient();
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await client.query(`LISTEN ${quoteIdent(channel)}`);
      }
      set.add(onNotify);
      return async () => {
        set.delete(onNotify);
      };
    },
    async close() {
      if (listener) {
        const client = await listener.catch(() => undefined);
        client?.release(true);
      }
      if (ownsPool) await pool.end();
    },
  };
}
