import type { Driver } from '../../driver.js';
import { type PgPoolLike, withinMs } from './client.js';
import { Listening } from './listen.js';
import { PoolerDetector, statementLostEvidence } from './pooler.js';
import { PoolStatements } from './statements.js';
import { pgTransaction } from './transaction.js';

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

/**
 * The ledger's driver over a `pg.Pool` (or any pool of its shape), put together from its parts: the pool's
 * statements with their named-to-unnamed fallback (statements.ts), transactions (transaction.ts), the reserved
 * connection with LISTEN and its heartbeat (listen.ts, reserved.ts) and the pooler detector (pooler.ts).
 */
export function pgDriver(pool: PgPoolLike, settings: PgDriverSettings): Driver {
  const { ownsPool, preparedStatements, answerTimeoutMs } = settings;
  const pooler = new PoolerDetector(pool, answerTimeoutMs);
  const listening = new Listening(pool, pooler, answerTimeoutMs, settings.heartbeatMs ?? 10_000);
  const statements = new PoolStatements(pool, preparedStatements, (error) => {
    const wasListening = pooler.state !== 'present' && listening.active;
    pooler.found(statementLostEvidence(error));
    // A LISTEN already sent went to a pooled backend: drop that connection, so nothing listens any more.
    if (wasListening) listening.drop();
  });
  const poolQuery = statements.query;

  return {
    kind: 'pg',
    // A pool tool-ledger opened bounds its statements with pg's own timeouts; one passed in gets the driver's bound
    // as well.
    query: ownsPool ? poolQuery : (text, params) => withinMs(poolQuery(text, params), answerTimeoutMs),
    reserved: { query: listening.query },
    transaction: (fn) => pgTransaction(pool, answerTimeoutMs, fn),
    plansEveryStatement: () => statements.unnamed,
    listen: listening.listen,
    async close() {
      listening.close();
      // Bounded: a pool whose clients wait on a dead network would otherwise keep close() from returning.
      if (ownsPool) await withinMs(pool.end(), answerTimeoutMs).catch(() => {});
    },
  };
}
