import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { checkoutWithin } from '../../src/ledger/drivers/pg/client.js';
import { databaseUrl } from '../support/db.js';

// A pool of one whose only client is busy: the next checkout waits in pg-pool's queue past our bound.
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
afterAll(() => pool.end());

describe('checkoutWithin (a bounded pool.connect)', () => {
  it('gives up in time, then destroys the client that arrives late instead of leaking it unguarded', async () => {
    const busy = await pool.connect();
    const late = checkoutWithin(pool, 50, () => {});
    await expect(late).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(pool.waitingCount).toBe(1);
    busy.release();
    // The late client goes straight back, destroyed: the pool ends up with no client out and none waiting.
    for (let i = 0; i < 100 && (pool.waitingCount > 0 || pool.totalCount > pool.idleCount); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(pool.waitingCount).toBe(0);
    expect(pool.totalCount - pool.idleCount).toBe(0);
    // And the pool still serves.
    const again = await checkoutWithin(pool, 5_000, () => {});
    expect((await again.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    again.release();
  });
});
