import { classifyDriverError } from '../../driver-errors.js';
import { quoteIdent } from '../../sql/names.js';
import type { PgPoolLike } from './client.js';
import type { PoolerDetector } from './pooler.js';
import { type OpenConnection, openReserved, ReservedConnection, send } from './reserved.js';

/**
 * The pg driver's reserved connection in use: lease renewals through `query`, and LISTEN on every channel anyone
 * subscribed to, with a heartbeat that finds a black-holed connection. LISTEN waits until the pooler probe says no
 * pooler in transaction mode is in front (see `PoolerDetector`); through one, nothing listens and waiters poll.
 */
export class Listening {
  readonly #pooler: PoolerDetector;
  readonly #answerTimeoutMs: number;
  readonly #heartbeatMs: number;
  readonly #handlers = new Map<string, Set<(payload: string) => void>>();
  readonly #reserved: ReservedConnection;
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(pool: PgPoolLike, pooler: PoolerDetector, answerTimeoutMs: number, heartbeatMs: number) {
    this.#pooler = pooler;
    this.#answerTimeoutMs = answerTimeoutMs;
    this.#heartbeatMs = heartbeatMs;
    this.#reserved = new ReservedConnection({
      open: (onLost) => openReserved(pool, onLost, answerTimeoutMs),
      subscribe: (connection) => this.#subscribe(connection),
      wanted: () => this.#handlers.size > 0 && pooler.state !== 'present',
    });
  }

  /** Whether anyone subscribed to a channel. */
  get active(): boolean {
    return this.#handlers.size > 0;
  }

  /** Runs one statement on the reserved connection; a connection that does not answer is replaced. */
  readonly query = async <R>(text: string, params?: unknown[]): Promise<{ rows: R[] }> => {
    const connection = await this.#reserved.connection();
    try {
      return await send<R>(connection, text, params, this.#answerTimeoutMs);
    } catch (error) {
      if (classifyDriverError(error).outcomeUnknown) this.#reserved.lost(connection);
      throw error;
    }
  };

  /** Subscribes to a channel. Resolves to an unsubscribe function. */
  readonly listen = async (
    channel: string,
    onNotify: (payload: string) => void,
  ): Promise<() => Promise<void>> => {
    let set = this.#handlers.get(channel);
    const isNew = set === undefined;
    if (!set) {
      set = new Set();
      this.#handlers.set(channel, set);
    }
    set.add(onNotify);
    this.#startHeartbeat();
    try {
      const connection = await this.#reserved.connection();
      // The first LISTEN waits for the probe (a waiter can; a renewal never does, see #subscribe).
      const first = this.#pooler.state === 'unknown';
      if (first) await this.#pooler.probe(connection);
      // LISTEN is idempotent, so a channel a fresh connection already listened to costs one no-op statement.
      if ((isNew || first) && this.#pooler.state === 'absent') {
        await send(connection, `LISTEN ${quoteIdent(channel)}`, undefined, this.#answerTimeoutMs);
      }
    } catch (error) {
      // Registered anyway: the LISTEN connection comes back on its own (backoff) and subscribes to every channel.
      this.#reserved.ensure();
      throw error;
    }
    const registered = set;
    return async () => {
      registered.delete(onNotify);
    };
  };

  /** Drops the connection on purpose: a LISTEN already sent went to a pooled backend, so nothing listens any more. */
  drop(): void {
    this.#reserved.drop();
  }

  close(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#reserved.close();
  }

  async #subscribe(connection: OpenConnection): Promise<void> {
    connection.client.on('notification', (message) => {
      for (const handler of this.#handlers.get(message.channel) ?? []) handler(message.payload ?? '');
    });
    const pooler = this.#pooler;
    if (pooler.state === 'absent') await this.#listenAll(connection);
    else if (pooler.state === 'unknown' && this.#handlers.size > 0) {
      // Not awaited: the probe needs a pool client, and renewals must never wait for the pool. LISTEN follows it.
      // A failure of either is left to the next LISTEN (the notifier polls meanwhile), never unhandled.
      pooler
        .probe(connection)
        .then(() => (pooler.state === 'absent' ? this.#listenAll(connection) : undefined))
        .catch(() => {});
    }
  }

  async #listenAll(connection: OpenConnection): Promise<void> {
    for (const channel of this.#handlers.keys()) {
      await send(connection, `LISTEN ${quoteIdent(channel)}`, undefined, this.#answerTimeoutMs);
    }
  }

  #startHeartbeat(): void {
    if (this.#heartbeat || this.#heartbeatMs <= 0) return;
    // A black-holed connection raises no error; only a statement that goes unanswered shows it is gone.
    this.#heartbeat = setInterval(() => {
      if (this.#handlers.size === 0 || this.#reserved.state !== 'open') return;
      this.query('SELECT 1').catch(() => {});
    }, this.#heartbeatMs);
    this.#heartbeat.unref();
  }
}
