import { isThenable } from '../../../contract/thenable.js';
import type { Queryable } from '../../../contract/types.js';

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
  /** pg-pool's callback form, called synchronously as the client is handed over (see `checkoutWithin`). */
  connect(callback: (error: Error | undefined, client: PgClientLike | undefined) => void): void;
  end(): Promise<void>;
}

/** A `pg.Pool`'s client class, for a connection opened beside the pool (see `openReserved`). */
export type ClientConstructor = new (
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
 * `pool.connect()` bounded in time, with `onError` listening on the client from the moment the pool hands it over.
 *
 * pg-pool removes its own error listener as it hands a client out. Through the promise form, ours would go on a
 * microtask later; on a loaded machine the parser can read the server's FATAL (a terminated backend) in the same
 * chunk as the ReadyForQuery that completed the checkout, and an 'error' event with no listener crashes the process.
 * pg-pool's callback form runs synchronously at the handover, so there is no such gap. A pool-like object of the
 * caller's that only has the promise form is still served: its promise is used, with the old gap.
 *
 * A client the pool hands out after the caller gave up goes straight back, destroyed: otherwise it would be leaked
 * from the pool.
 */
export async function checkoutWithin(
  pool: Pick<PgPoolLike, 'connect'>,
  ms: number,
  onError: (error: Error) => void,
): Promise<PgClientLike> {
  const pending = new Promise<PgClientLike>((resolve, reject) => {
    let settled = false;
    const take = (client: PgClientLike) => {
      if (settled) return;
      settled = true;
      client.on('error', onError);
      resolve(client);
    };
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      reject(error);
    };
    const returned: unknown = pool.connect((error, client) =>
      error || client === undefined
        ? fail(error ?? new Error('the pool handed over no client'))
        : take(client),
    );
    if (isThenable(returned)) {
      returned.then((client) => {
        if (client !== undefined) take(client as PgClientLike);
      }, fail);
    }
  });
  try {
    return await withinMs(pending, ms);
  } catch (error) {
    pending.then(
      (late) => late.release(true),
      () => {},
    );
    throw error;
  }
}
