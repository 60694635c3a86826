import type { Queryable } from '../../contract/types.js';
import type { Driver } from '../driver.js';
import { createInMemoryPGlite } from './pglite-template.js';

/** The parts of a PGlite instance used here, described structurally. */
export interface PGliteLike extends Queryable {
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  readonly closed?: boolean;
}

export function pgliteDriver(db: PGliteLike, ownsDb: boolean): Driver {
  return {
    kind: 'pglite',
    query: (text, params) => db.query(text, params),
    reserved: { query: (text, params) => db.query(text, params) },
    transaction: (fn) => db.transaction(fn),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    async close() {
      if (ownsDb && !db.closed) await db.close();
    },
  };
}

/** Opens PGlite lazily so pg users never load its WebAssembly. In memory, it starts from a saved initdb. */
export async function openPGlite(dataDir: string | undefined): Promise<PGliteLike> {
  const pglite = await import('@electric-sql/pglite');
  if (dataDir === undefined || dataDir === 'memory://') return createInMemoryPGlite<PGliteLike>(pglite);
  return (await pglite.PGlite.create(dataDir)) as unknown as PGliteLike;
}
