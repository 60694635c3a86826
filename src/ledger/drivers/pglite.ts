import type { Queryable } from '../../contract/types.js';
import type { Driver } from '../driver.js';
import { LATEST_VERSION } from '../migrations.js';
import { createInMemoryPGlite, loadTemplate, saveTemplate, templatePath } from './pglite-template.js';
import { DEFAULT_WAL_BOUND, WalBound, type WalBoundOptions } from './pglite-wal.js';

/** The parts of a PGlite instance used here, described structurally. */
export interface PGliteLike extends Queryable {
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  readonly closed?: boolean;
}

/**
 * The ledger's driver over PGlite. `walBound` is for tests: PGlite never checkpoints by itself, so the driver does
 * (pglite-wal.ts), also on an instance you pass in, whose WAL the ledger's writes would otherwise grow for good.
 */
export function pgliteDriver(
  db: PGliteLike,
  ownsDb: boolean,
  walBound: WalBoundOptions = DEFAULT_WAL_BOUND,
): Driver {
  const wal = new WalBound(db, walBound);
  const query: Driver['query'] = <R>(text: string, params?: unknown[]) => {
    const answer = db.query<R>(text, params);
    wal.counted();
    return answer;
  };
  return {
    kind: 'pglite',
    query,
    reserved: { query },
    transaction: (fn) => db.transaction(fn),
    // PGlite parses and plans every statement it is sent: through the server functions a first execution took
    // 1.0 ms of CPU instead of 1.35 (1,205-1,245 against 878-892 calls/s in one process, two runs each).
    plansEveryStatement: () => true,
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    async close() {
      await wal.settled();
      if (ownsDb && !db.closed) await db.close();
    },
  };
}

/** Opens PGlite lazily so pg users never load its WebAssembly. In memory, it starts from a saved initdb. */
export async function openPGlite(dataDir: string | undefined): Promise<PGliteLike> {
  const pglite = await import('@electric-sql/pglite');
  if (dataDir === undefined || dataDir === 'memory://') return createInMemoryPGlite<PGliteLike>(pglite);
  // Postgres' own WAL settings here: its 16 MB segments need min_wal_size of 32 MB or more, and the driver's
  // checkpoints bound the WAL kept on disk all the same (pglite-wal.ts).
  return (await pglite.PGlite.create(dataDir)) as unknown as PGliteLike;
}

/** An in-memory PGlite for one schema, and how to save it once migrated when it did not start migrated. */
export interface InMemoryLedgerDb {
  readonly db: PGliteLike;
  /**
   * Saves the cluster as this schema's migrated start. Call it right after the migrations and before anything
   * else is written: what it saves, every later in-memory start begins with (so never the key-hash secret).
   */
  readonly saveMigrated: (() => Promise<void>) | undefined;
}

/**
 * The embedded default: an in-memory PGlite that starts from a saved cluster already migrated for `schema` when one
 * was saved, else from the saved initdb (`saveMigrated` then saves the migrated one). The migrations still run
 * either way; on a migrated start they find nothing to do. `paths` is for tests.
 */
export async function openInMemoryLedgerDb(
  schema: string,
  paths: { readonly initdb?: string; readonly migrated?: string } = {},
): Promise<InMemoryLedgerDb> {
  const pglite = await import('@electric-sql/pglite');
  const migratedPath = paths.migrated ?? (await templatePath({ schema, version: LATEST_VERSION }));
  const migrated = migratedPath ? await loadTemplate<PGliteLike>(pglite, migratedPath) : undefined;
  if (migrated) return { db: migrated, saveMigrated: undefined };
  const db = await createInMemoryPGlite<PGliteLike>(pglite, paths.initdb);
  await dropTemplateDatabases(db);
  return {
    db,
    saveMigrated: migratedPath
      ? () => saveTemplate(db as unknown as Parameters<typeof saveTemplate>[0], migratedPath)
      : undefined,
  };
}

/**
 * The ledger's in-memory cluster is its alone and uses one database (`postgres`, PGlite's default), but initdb also
 * makes template0 and template1, half of the data directory (15 of 31 MB, docs/performance.md "Embedded start").
 * Dropped before the migrations, so the migrated cluster saved for later starts holds one database, and every
 * later start loads, unzips and keeps resident half as much. Nothing can create a database here afterwards, and
 * nothing needs to. DROP DATABASE refuses to run in a transaction, hence one statement at a time.
 */
async function dropTemplateDatabases(db: PGliteLike): Promise<void> {
  for (const name of ['template0', 'template1']) {
    await db.query(`ALTER DATABASE ${name} IS_TEMPLATE false`);
    await db.query(`DROP DATABASE ${name}`);
  }
}
