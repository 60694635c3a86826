import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { checkoutWithin, type PgClientLike } from '../../../src/ledger/drivers/pg/client.js';

/**
 * A pool that does what pg's parser can do on a loaded machine: the ReadyForQuery that completes a new client's
 * connection and the FATAL of a terminated backend arrive in one chunk, so the client's 'error' event fires in the
 * same synchronous run as the handover, before any promise continuation (seen in the fault suite's "terminate all
 * backends" as an uncaught error).
 */
function poolThatDiesAtHandover() {
  const released: unknown[] = [];
  const pool = {
    connect(callback: (error: Error | undefined, client: PgClientLike | undefined) => void): void {
      const client = Object.assign(new EventEmitter(), {
        query: async () => ({ rows: [] }),
        release: (destroy?: unknown) => released.push(destroy),
      }) as unknown as PgClientLike & EventEmitter;
      callback(undefined, client);
      client.emit('error', new Error('terminating connection due to administrator command'));
    },
  };
  return { pool: pool as never, released };
}

describe('checkoutWithin', () => {
  it('has its listener on the client at the handover, so a FATAL in the same chunk is heard, not thrown', async () => {
    const heard: string[] = [];
    const { pool } = poolThatDiesAtHandover();
    const client = await checkoutWithin(pool, 1_000, (error) => heard.push(error.message));
    expect(client).toBeDefined();
    expect(heard).toEqual(['terminating connection due to administrator command']);
  });

  it('serves a pool-like object that has only the promise form, as a caller may wrap a pool', async () => {
    const client = Object.assign(new EventEmitter(), {
      query: async () => ({ rows: [] }),
      release: () => {},
    });
    const heard: string[] = [];
    const promiseOnly = { connect: async () => client };
    const got = await checkoutWithin(promiseOnly as never, 1_000, (error) => heard.push(error.message));
    expect(got).toBe(client);
    client.emit('error', new Error('later'));
    expect(heard).toEqual(['later']);
  });

  it('passes on the pool’s refusal', async () => {
    const pool = { connect: (callback: (error: Error) => void) => callback(new Error('pool ended')) };
    await expect(checkoutWithin(pool as never, 1_000, () => {})).rejects.toThrow('pool ended');
  });
});
