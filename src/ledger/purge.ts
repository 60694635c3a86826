import type { Queryable } from '../contract/types.js';
import {
  afterBatch,
  PURGE_WINDOW_BLOCKS,
  type PurgeSweep,
  parseTid,
  startSweep,
  windowBounds,
} from './purge-sweep.js';
import { purgeExpiredBatchSql, purgeStartSql, purgeWindowPlanSql, purgeWindowSql, runsTable } from './sql.js';

/** What a purge needs of a connection: statements, and a transaction for a window batch's plan settings. */
export interface PurgeConnection extends Queryable {
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
}

/** Starts a purge of the table layout: a sweep of the heap as it is now (see purge-sweep.ts). */
export async function startPurge(
  db: Queryable,
  schema: string,
  windowBlocks: number = PURGE_WINDOW_BLOCKS,
): Promise<PurgeSweep> {
  type Start = { server_version: number; heap_blocks: string; partitioned: boolean };
  const { rows } = await db.query<Start>(purgeStartSql(), [runsTable(schema)]);
  const row = rows[0];
  if (row === undefined) throw new Error(`${runsTable(schema)} is not in pg_class`);
  return startSweep(
    {
      serverVersion: Number(row.server_version),
      heapBlocks: Number(row.heap_blocks),
      partitioned: row.partitioned,
    },
    windowBlocks,
  );
}

/** Deletes one batch of the sweep; returns how many rows went and where the sweep goes on. */
export async function purgeBatch(
  db: PurgeConnection,
  schema: string,
  batchSize: number,
  sweep: PurgeSweep,
): Promise<{ readonly deleted: number; readonly next: PurgeSweep }> {
  switch (sweep.kind) {
    case 'done':
      return { deleted: 0, next: sweep };
    case 'whole-table': {
      const { rows } = await db.query(purgeExpiredBatchSql(schema), [batchSize]);
      return {
        deleted: rows.length,
        next: afterBatch(sweep, { taken: rows.length, batchSize, last: undefined }),
      };
    }
    case 'window': {
      const { from, before } = windowBounds(sweep);
      const row = await db.transaction(async (tx) => {
        await tx.query(purgeWindowPlanSql());
        const { rows } = await tx.query<{ taken: number; deleted: number; last: string | null }>(
          purgeWindowSql(schema),
          [batchSize, from, before],
        );
        return rows[0];
      });
      const taken = Number(row?.taken ?? 0);
      const last = row?.last == null ? undefined : parseTid(row.last);
      return { deleted: Number(row?.deleted ?? 0), next: afterBatch(sweep, { taken, batchSize, last }) };
    }
  }
}
