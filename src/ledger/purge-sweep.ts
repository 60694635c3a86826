/**
 * How the table layout's purge walks the heap. No index serves it: the expiry BRIN of migration 8 could not sort,
 * and once purged space was reused its ranges' minimums stayed old, so it could not bound a batch either (migration
 * 13 dropped it, since every first execution paid to update it). A batch that scans for
 * `LIMIT n` expired rows anywhere in the table ends well while expired rows are dense, but the last batch of every
 * purge (the one that finds fewer than n) reads the whole table to be sure: 9.1 s at 30 M rows (908 k blocks),
 * measured, past the default statement timeout of 5 s. So the purge sweeps the heap in windows of physical blocks
 * (a TID range scan, PostgreSQL 14 and later): each batch reads at most one window, the next batch starts where
 * the last one stopped, and one purge reads the table once, in statements that each stay short.
 */

/** Blocks one batch may read: 128 MB of 8 kB blocks, about 0.1 s from memory and under a second from disk. */
export const PURGE_WINDOW_BLOCKS = 16_384;

/** TID range scans came in PostgreSQL 14; on 13 a `ctid` bound is a filter, and every window would read the table. */
export const TID_RANGE_SCAN_VERSION = 140_000;

/** A tuple's place in the heap: block number and line pointer (a `tid`). */
export interface HeapPosition {
  readonly block: number;
  readonly offset: number;
}

export type PurgeSweep =
  /** Batches of expired rows in `[from, (from.block + windowBlocks, 0))`, until `endBlock` (the heap's end at start). */
  | {
      readonly kind: 'window';
      readonly from: HeapPosition;
      readonly endBlock: number;
      readonly windowBlocks: number;
    }
  /** PostgreSQL 13, or a partitioned table: batches over the whole table, the last of which reads all of it. */
  | { readonly kind: 'whole-table' }
  /**
   * A table distributed with Citus: rounds of a batch on every shard, each on its worker (`purgeShardsSql`), until
   * no shard fills its batch. The coordinator holds no heap of the table to sweep.
   */
  | { readonly kind: 'shards' }
  | { readonly kind: 'done' };

export type PurgeSweepKind = PurgeSweep['kind'];

/** What one batch reported: how many rows it took and the position of the last (in heap order). */
export interface PurgeBatchOutcome {
  readonly taken: number;
  readonly batchSize: number;
  readonly last: HeapPosition | undefined;
}

/** What a purge finds when it starts (see `purgeStartSql`). */
export interface PurgeStart {
  readonly serverVersion: number;
  readonly heapBlocks: number;
  /** A partitioned table (the partitioned layout, purged by the CLI) has no heap of its own to sweep. */
  readonly partitioned: boolean;
}

export function startSweep(
  { serverVersion, heapBlocks, partitioned }: PurgeStart,
  windowBlocks: number,
): PurgeSweep {
  if (serverVersion < TID_RANGE_SCAN_VERSION || partitioned) return { kind: 'whole-table' };
  if (heapBlocks <= 0) return { kind: 'done' };
  return { kind: 'window', from: { block: 0, offset: 0 }, endBlock: heapBlocks, windowBlocks };
}

/** The window's bounds as `tid` literals: `from` inclusive, `before` exclusive. */
export function windowBounds(sweep: Extract<PurgeSweep, { kind: 'window' }>): {
  readonly from: string;
  readonly before: string;
} {
  return {
    from: tidText(sweep.from),
    before: tidText({ block: sweep.from.block + sweep.windowBlocks, offset: 0 }),
  };
}

const AFTER_BATCH: {
  readonly [K in PurgeSweepKind]: (
    sweep: Extract<PurgeSweep, { kind: K }>,
    outcome: PurgeBatchOutcome,
  ) => PurgeSweep;
} = {
  // A full batch may have stopped mid-window: go on just after its last row. A short one exhausted the window.
  window: (sweep, { taken, batchSize, last }) => {
    const from =
      taken >= batchSize && last !== undefined
        ? { block: last.block, offset: last.offset + 1 }
        : { block: sweep.from.block + sweep.windowBlocks, offset: 0 };
    return from.block >= sweep.endBlock ? { kind: 'done' } : { ...sweep, from };
  },
  'whole-table': (sweep, { taken, batchSize }) => (taken < batchSize ? { kind: 'done' } : sweep),
  // `taken` is the most any one shard deleted: a shard that filled its batch may hold more.
  shards: (sweep, { taken, batchSize }) => (taken < batchSize ? { kind: 'done' } : sweep),
  done: (sweep) => sweep,
};

export function afterBatch(sweep: PurgeSweep, outcome: PurgeBatchOutcome): PurgeSweep {
  const next = AFTER_BATCH[sweep.kind] as (sweep: PurgeSweep, outcome: PurgeBatchOutcome) => PurgeSweep;
  return next(sweep, outcome);
}

export function tidText({ block, offset }: HeapPosition): string {
  return `(${block},${offset})`;
}

/** Parses Postgres' text form of a `tid`, `(block,offset)`. */
export function parseTid(text: string): HeapPosition {
  const match = /^\((\d+),(\d+)\)$/.exec(text);
  if (match === null) throw new TypeError(`not a tid: ${text}`);
  return { block: Number(match[1]), offset: Number(match[2]) };
}
