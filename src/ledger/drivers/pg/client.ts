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
