import type { Queryable } from '../../contract/types.js';

/**
 * PGlite runs Postgres as one backend with no checkpointer, so nothing checkpoints when WAL reaches `max_wal_size`
 * or `checkpoint_timeout` passes, and no WAL segment is ever removed: the data directory (held in memory by the
 * embedded default) grew by every WAL byte written (640 per first execution there) for as long as the process
 * ran. The driver checkpoints itself instead, once the WAL written since the last checkpoint passes a bound; the
 * checkpoint then removes the segments before it (recycling a few, up to `max_wal_size`).
 */
export interface WalBoundOptions {
  /**
   * How many statements pass between two looks at the WAL written since the last checkpoint (one cheap query).
   * @default 1000
   */
  readonly checkEveryStatements: number;
  /**
   * WAL written since the last checkpoint, in bytes, above which the driver checkpoints.
   * @default 8 MiB
   */
  readonly checkpointAfterBytes: number;
}

export const DEFAULT_WAL_BOUND: WalBoundOptions = Object.freeze({
  checkEveryStatements: 1000,
  checkpointAfterBytes: 8 * 2 ** 20,
});

/**
 * Server settings of an in-memory cluster (1 MB segments) that keep few segments after a checkpoint: with
 * Postgres' defaults (`min_wal_size` 80 MB) a checkpoint recycles up to 80 of them rather than removing them, all
 * of it resident in memory. `min_wal_size` must be at least two segments.
 */
export const PGLITE_WAL_SETTINGS = { min_wal_size: '2MB', max_wal_size: '16MB' } as const satisfies Record<
  string,
  string
>;

const WAL_SINCE_CHECKPOINT_SQL =
  'SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::float8 AS bytes FROM pg_control_checkpoint()';

/**
 * Counts statements and, every `checkEveryStatements`, checkpoints when the WAL since the last checkpoint passed the
 * bound. Runs beside the ledger's statements and never changes their outcome: a failed look or checkpoint (a role
 * that may not checkpoint, a closed database) is tried again at the next count.
 */
export class WalBound {
  readonly #db: Queryable;
  readonly #options: WalBoundOptions;
  #statements = 0;
  #running: Promise<void> | undefined;

  constructor(db: Queryable, options: WalBoundOptions = DEFAULT_WAL_BOUND) {
    this.#db = db;
    this.#options = options;
  }

  /** One statement was sent. */
  counted(): void {
    if (++this.#statements < this.#options.checkEveryStatements || this.#running) return;
    this.#statements = 0;
    this.#running = this.#check()
      .catch(() => {})
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** Waits for a look or checkpoint in flight, so that closing the database never cuts one off. */
  async settled(): Promise<void> {
    await this.#running;
  }

  async #check(): Promise<void> {
    const { rows } = await this.#db.query<{ bytes: number }>(WAL_SINCE_CHECKPOINT_SQL);
    if ((rows[0]?.bytes ?? 0) < this.#options.checkpointAfterBytes) return;
    await this.#db.query('CHECKPOINT');
  }
}
