import { createHash } from 'node:crypto';
import { ToolLedgerError } from '../../contract/errors.js';
import type { Queryable } from '../../contract/types.js';
import type { Driver } from '../driver.js';
import { classifyDriverError, ledgerUnavailable } from '../errors.js';
import { quoteIdent } from '../sql.js';
import { type OpenConnection, ReservedConnection } from './reserved.js';

/** The parts of a `pg.PoolClient` used here, described structurally so any pg 8.x works. */
export interface PgClientLike extends Queryable {
  release(destroy?: boolean | Error): void;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  removeListener?(event: 'error', listener: (error: Error) => void): unknown;
  removeAllListeners?(event?: string): unknown;
}

/** The parts of a `pg.Pool` used here. */
export interface PgPoolLike extends Queryable {
  connect(): Promise<PgClientLike>;
  end(): Promise<void>;
}

export interface PgDriverSettings {
  /** `close()` ends the pool. */
  readonly ownsPool: boolean;
  readonly preparedStatements: boolean;
  /**
   * Bounds every statement the driver sends itself, including the wait for a connection. Pools tool-ledger opens
   * also carry pg's own `query_timeout`, which discards the stuck client; a pool you pass in should set it too.
   */
  readonly answerTimeoutMs: number;
  /** How often the reserved connection proves it is alive while LISTEN is needed. */
  readonly heartbeatMs?: number;
}

/** Sends one statement on the reserved connection after the ones before it, all within the bound. */
function send<R>(connection: OpenConnection, text: string, params: unknown[] | undefined, ms: number) {
  const work = () => connection.client.query<R>(text, params);
  const next = (connection.tail ?? Promise.resolve()).then(work, work);
  connection.tail = next.catch(() => {});
  return withinMs(next, ms);
}

type ClientConstructor = new (
  options: unknown,
) => Pick<PgClientLike, 'query' | 'on'> & {
  connect(): Promise<void>;
  end(): Promise<void>;
};

/** Rejects with an `ETIMEDOUT`-coded error (outcome unknown) when `work` has not answered within `ms`. */
export function withinMs<T>(work: Promise<T>, ms: number): Promise<T> {
  if (!(ms > 0) || !Number.isFinite(ms)) return work;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          Object.assign(new Error(`no answer from the database within ${ms / 1000} s`), {
            code: 'ETIMEDOUT',
          }),
        ),
      ms,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * `pool.connect()` bounded in time. A client the pool hands out after the caller gave up goes straight back,
 * destroyed: otherwise it would be leaked from the pool and, with pg-pool's own error listener removed on checkout,
 * crash the process with an unhandled 'error' event the moment its connection dies.
 */
export async function checkoutWithin(pool: Pick<PgPoolLike, 'connect'>, ms: number): Promise<PgClientLike> {
  const pending = pool.connect();
  try {
    return await withinMs(pending, ms);
  } catch (error) {
    pending.then(
      (late) => {
        late.on('error', () => {});
        late.release(true);
      },
      () => {},
    );
    throw error;
  }
}

/**
 * A `pg.Pool` exposes its client class and options, so the reserved connection is opened beside the pool rather
 * than taking one of its clients (a full pool would otherwise starve renewals and a pool of one deadlock its
 * waiters); other pools lend a client.
 */
async function openReserved(
  pool: PgPoolLike,
  onLost: () => void,
  connectMs: number,
): Promise<OpenConnection> {
  const { Client, options } = pool as { Client?: ClientConstructor; options?: unknown };
  let lost = false;
  const lose = () => {
    if (lost) return;
    lost = true;
    onLost();
  };
  if (typeof Client === 'function' && options) {
    const client = new Client(options);
    client.on('error', lose);
    client.on('end', lose);
    const destroy = () => {
      const stream = (client as { connection?: { stream?: { destroy?(): void } } }).connection?.stream;
      stream?.destroy?.();
      client.end().catch(() => {});
    };
    try {
      await withinMs(client.connect(), connectMs);
    } catch (error) {
      destroy();
      throw error;
    }
    return { client, dispose: destroy };
  }
  const client = await checkoutWithin(pool, connectMs);
  client.on('error', lose);
  return { client, dispose: () => client.release(true) };
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

type QueryConstructor = new (text: string, values: unknown[] | undefined) => { name?: string };

/**
 * For a `pg.Pool`, a named statement as pg's own `Query`, built from the text so pg does not copy a config object
 * property by property (`normalizeQueryConfig`: 5 µs per statement, two statements per first execution). pg
 * runs a query object as given (it has `submit`); the name set afterwards makes it a prepared statement, as the
 * config's `name` would. Other pools get the plain config.
 */
function submittableQueryOf(
  pool: PgPoolLike,
): ((name: string, text: string, values: unknown[] | undefined) => object) | undefined {
  const Query = (pool as { Client?: { Query?: unknown } }).Client?.Query;
  if (typeof Query !== 'function' || typeof (Query.prototype as { submit?: unknown }).submit !== 'function') {
    return undefined;
  }
  const QueryClass = Query as QueryConstructor;
  return (name, text, values) => {
    const query = new QueryClass(text, values);
    query.name = name;
    return query;
  };
}

export const POOLER_WARNING_CODE = 'TOOL_LEDGER_POOLER';

/**
 * Said once per driver when a named statement went missing between connections: the one sign of a pooler in
 * transaction mode that the ledger can see without being told.
 */
function poolerWarning(evidence: string): string {
  return `tool-ledger: a pooler in transaction mode sits in front of Postgres (PgBouncer, RDS Proxy, Supavisor): ${evidence}. The ledger sends unnamed statements (pass preparedStatements: false to start that way) and no LISTEN, which does not work through transaction pooling: a duplicate call waiting for a running key polls instead, and sees its completion within 0.6 s plus one round trip (docs/operations.md, "PgBouncer").`;
}

function describeError(error: unknown): string {
  const detail = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  return `a prepared statement was lost between connections (${detail}${typeof code === 'string' && !detail.includes(code) ? ` [${code}]` : ''})`;
}

/** Failures of COMMIT that are a definite answer: the transaction rolled back. */
function commitRolledBack(error: unknown): boolean {
  return classifyDriverError(error).rolledBack === true;
}

function commitOutcomeUnknown(error: unknown): ToolLedgerError {
  const detail = error instanceof Error ? error.message : String(error);
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `The connection failed while committing the transaction (${detail}), so whether it committed is unknown. Retry with the same idempotency key: the retry replays the result if it committed and runs the call if it did not. Do not use a new key.`,
    { cause: error, retryable: true },
  );
}

export function pgDriver(pool: PgPoolLike, settings: PgDriverSettings): Driver {
  const { ownsPool, preparedStatements, answerTimeoutMs } = settings;
  const heartbeatMs = settings.heartbeatMs ?? 10_000;
  const names = new Map<string, string>();
  const statementNameOf = (text: string): string => {
    let name = names.get(text);
    if (name === undefined) {
      name = statementName(text);
      names.set(text, name);
    }
    return name;
  };
  const named = (text: string, values: unknown[] | undefined): NamedQuery => ({
    name: statementNameOf(text),
    text,
    values,
  });
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let heartbeat: NodeJS.Timeout | undefined;

  /**
   * Whether a pooler in transaction mode sits in front of Postgres: unknown until the first LISTEN (or a lost
   * prepared statement) finds out. Through such a pooler LISTEN must never be sent: the session that listens is
   * handed to other clients, and with PgBouncer 1.18 answers then reach the wrong client (a claim read another
   * statement's row and ran its handler a second time, in this project's tests). Waiters poll instead.
   */
  let pooler: 'unknown' | 'absent' | 'present' = 'unknown';
  let warned = false;
  const poolerFound = (evidence: string) => {
    pooler = 'present';
    if (warned) return;
    warned = true;
    process.emitWarning(poolerWarning(evidence), { code: POOLER_WARNING_CODE });
  };

  /**
   * Finds a pooler in transaction mode before the first LISTEN: the reserved connection's backend is read, then a
   * pool client holds a transaction open, then the reserved connection's backend is read again. On a connection
   * of its own, the backend never changes and the pool client's is another one; through transaction pooling the
   * pool client is handed the backend the reserved connection just released (PgBouncer reuses the most recent
   * one), or the reserved connection lands on another. Three rounds, so a busy pool's churn cannot hide it.
   */
  const probePooler = async (connection: OpenConnection): Promise<void> => {
    const pid = async (q: (text: string) => Promise<{ rows: Array<{ pid: number }> }>) =>
      (await q('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    for (let round = 0; round < 3 && pooler === 'unknown'; round++) {
      const own = () =>
        send<{ pid: number }>(connection, 'SELECT pg_backend_pid() AS pid', undefined, answerTimeoutMs);
      const first = await pid(own);
      const other = await checkoutWithin(pool, answerTimeoutMs);
      const onError = () => {};
      other.on('error', onError);
      let broken: Error | true | undefined;
      try {
        const inTx = (text: string) => withinMs(other.query<{ pid: number }>(text), answerTimeoutMs);
        await inTx('BEGIN');
        const held = await pid(inTx);
        const again = await pid(own);
        await inTx('COMMIT');
        if (first !== again)
          poolerFound(`the reserved connection's backend changed from ${first} to ${again}`);
        else if (held === first)
          poolerFound(`a pool client was handed the reserved connection's backend ${first}`);
      } catch (error) {
        broken = error instanceof Error ? error : true;
        throw error;
      } finally {
        other.removeListener?.('error', onError);
        other.release(broken);
      }
    }
    if (pooler === 'unknown') pooler = 'absent';
  };
  /** One probe at a time; one that failed (a full pool, a dead connection) is tried again by the next LISTEN. */
  let probing: Promise<void> | undefined;
  const probed = (connection: OpenConnection): Promise<void> => {
    probing ??= probePooler(connection).catch((error: unknown) => {
      probing = undefined;
      throw error;
    });
    return probing;
  };
  const listenAll = async (connection: OpenConnection) => {
    for (const channel of handlers.keys()) {
      await send(connection, `LISTEN ${quoteIdent(channel)}`, undefined, answerTimeoutMs);
    }
  };

  const reserved = new ReservedConnection({
    open: (onLost) => openReserved(pool, onLost, answerTimeoutMs),
    async subscribe(connection) {
      connection.client.on('notification', (message) => {
        for (const handler of handlers.get(message.channel) ?? []) handler(message.payload ?? '');
      });
      if (pooler === 'absent') await listenAll(connection);
      else if (pooler === 'unknown' && handlers.size > 0) {
        // Not awaited: the probe needs a pool client, and renewals must never wait for the pool. LISTEN follows it.
        // A failure of either is left to the next LISTEN (the notifier polls meanwhile), never unhandled.
        probed(connection)
          .then(() => (pooler === 'absent' ? listenAll(connection) : undefined))
          .catch(() => {});
      }
    },
    wanted: () => handlers.size > 0 && pooler !== 'present',
  });

  /** Runs one statement on the reserved connection; a connection that does not answer is replaced. */
  const onReserved = async <R>(text: string, params?: unknown[]): Promise<{ rows: R[] }> => {
    const connection = await reserved.connection();
    try {
      return await send<R>(connection, text, params, answerTimeoutMs);
    } catch (error) {
      if (classifyDriverError(error).outcomeUnknown) reserved.lost(connection);
      throw error;
    }
  };

  const startHeartbeat = () => {
    if (heartbeat || heartbeatMs <= 0) return;
    // A black-holed connection raises no error; only a statement that goes unanswered shows it is gone.
    heartbeat = setInterval(() => {
      if (handlers.size === 0 || reserved.state !== 'open') return;
      onReserved('SELECT 1').catch(() => {});
    }, heartbeatMs);
    heartbeat.unref();
  };

  const submittable = submittableQueryOf(pool);
  const unnamedQuery = <R>(text: string, params?: unknown[]) => pool.query<R>(text, params);
  const namedQuery = submittable
    ? <R>(text: string, params?: unknown[]) =>
        (pool as unknown as { query(q: object): Promise<{ rows: R[] }> }).query(
          submittable(statementNameOf(text), text, params),
        )
    : <R>(text: string, params?: unknown[]) =>
        (pool as unknown as { query(q: NamedQuery): Promise<{ rows: R[] }> }).query(named(text, params));
  // Named statements until a pooler shows it cannot keep them (see poolerFound); unnamed from then on.
  let statements: 'named' | 'unnamed' = preparedStatements ? 'named' : 'unnamed';
  const poolQuery = async <R>(text: string, params?: unknown[]): Promise<{ rows: R[] }> => {
    if (statements === 'unnamed') return unnamedQuery<R>(text, params);
    try {
      return await namedQuery<R>(text, params);
    } catch (error) {
      if (classifyDriverError(error).condition !== 'statement_lost') throw error;
      // The server refused the statement at Parse or Bind, before running anything, so sending it again is safe:
      // a claim or a completion is never lost or doubled by this retry.
      if (statements === 'named') {
        statements = 'unnamed';
        const wasListening = pooler !== 'present' && handlers.size > 0;
        poolerFound(describeError(error));
        // A LISTEN already sent went to a pooled backend: drop that connection, so nothing listens any more.
        if (wasListening) reserved.drop();
      }
      return unnamedQuery<R>(text, params);
    }
  };

  /** Checks out a client and opens a transaction on it, once more on a fresh client if the first was stale. */
  const begin = async (): Promise<{ client: PgClientLike; onError: (error: Error) => void }> => {
    for (let attempt = 1; ; attempt++) {
      let client: PgClientLike;
      try {
        client = await checkoutWithin(pool, answerTimeoutMs);
      } catch (error) {
        throw ledgerUnavailable(error, 'open a transaction');
      }
      // pg-pool removes its own error listener while a client is checked out: without this one, a connection
      // that dies mid-transaction would crash the process with an unhandled 'error' event.
      const onError = () => {};
      client.on('error', onError);
      try {
        await withinMs(client.query('BEGIN'), answerTimeoutMs);
        return { client, onError };
      } catch (error) {
        client.removeListener?.('error', onError);
        client.release(error instanceof Error ? error : true);
        if (attempt >= 2 || !classifyDriverError(error).retryable) {
          throw ledgerUnavailable(error, 'begin a transaction');
        }
      }
    }
  };

  return {
    kind: 'pg',
    // The ledger's statements are few and fixed per schema, so preparing them once per connection saves Postgres
    // from parsing and planning the claim's CTE on every call. A pool tool-ledger opened bounds them with pg's
    // own timeouts; one passed in gets the driver's bound as well.
    query: ownsPool ? poolQuery : (text, params) => withinMs(poolQuery(text, params), answerTimeoutMs),
    reserved: { query: onReserved },
    async transaction(fn) {
      const { client, onError } = await begin();
      let broken: Error | true | undefined;
      const tx: Queryable = {
        query: async (text, params) => {
          try {
            return await withinMs(client.query(text, params), answerTimeoutMs);
          } catch (error) {
            if (classifyDriverError(error).outcomeUnknown) broken = error instanceof Error ? error : true;
            throw error;
          }
        },
      };
      try {
        let result: Awaited<ReturnType<typeof fn>>;
        try {
          result = await fn(tx);
        } catch (error) {
          try {
            await withinMs(client.query('ROLLBACK'), answerTimeoutMs);
          } catch (rollbackError) {
            broken = rollbackError instanceof Error ? rollbackError : true;
          }
          // The connection died under the transaction: nothing committed, and the handler's error is the
          // driver's symptom, not its own failure.
          if (broken !== undefined && !(error instanceof ToolLedgerError)) {
            throw ledgerUnavailable(broken === true ? error : broken, 'finish the transaction');
          }
          throw error;
        }
        try {
          await withinMs(client.query('COMMIT'), answerTimeoutMs);
        } catch (error) {
          broken = error instanceof Error ? error : true;
          if (commitRolledBack(error)) throw ledgerUnavailable(error, 'commit the transaction');
          throw commitOutcomeUnknown(error);
        }
        return result;
      } finally {
        client.removeListener?.('error', onError);
        client.release(broken);
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
      startHeartbeat();
      try {
        const connection = await reserved.connection();
        // The first LISTEN waits for the probe (a waiter can; a renewal never does, see subscribe).
        const first = pooler === 'unknown';
        if (first) await probed(connection);
        // LISTEN is idempotent, so a channel a fresh connection already listened to costs one no-op statement.
        if ((isNew || first) && pooler === 'absent') {
          await send(connection, `LISTEN ${quoteIdent(channel)}`, undefined, answerTimeoutMs);
        }
      } catch (error) {
        // Registered anyway: the LISTEN connection comes back on its own (backoff) and subscribes to every channel.
        reserved.ensure();
        throw error;
      }
      const registered = set;
      return async () => {
        registered.delete(onNotify);
      };
    },
    async close() {
      if (heartbeat) clearInterval(heartbeat);
      reserved.close();
      // Bounded: a pool whose clients wait on a dead network would otherwise keep close() from returning.
      if (ownsPool) await withinMs(pool.end(), answerTimeoutMs).catch(() => {});
    },
  };
}
