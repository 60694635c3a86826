import { ToolLedgerError } from '../contract/errors.js';
import type { Queryable } from '../contract/types.js';
import { purgeShardsSql } from './citus-sql.js';
import {
  afterBatch,
  PURGE_WINDOW_BLOCKS,
  type PurgeSweep,
  parseTid,
  startSweep,
  windowBounds,
} from './purge-sweep.js';
import { runsTable } from './sql/names.js';
import { purgeExpiredBatchSql, purgeStartSql, purgeWindowPlanSql, purgeWindowSql } from './sql/purge.js';

/** What a purge needs of a connection: statements, and a transaction for a window batch's plan settings. */
export interface PurgeConnection extends Queryable {
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
}

/**
 * Starts a purge of the table layout: a sweep of the heap as it is now (see purge-sweep.ts), or, for a schema
 * distributed with Citus, rounds over its shards.
 */
export async function startPurge(
  db: Queryable,
  schema: string,
  windowBlocks: number = PURGE_WINDOW_BLOCKS,
  distributed = false,
): Promise<PurgeSweep> {
  if (distributed) return { kind: 'shards' };
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
    case 'shards': {
      const { rows } = await db.query<{ deleted: string; most: string; failure: string | null }>(
        purgeShardsSql(schema),
        [batchSize],
      );
      const row = rows[0];
      if (row?.failure != null) throw shardFailed(row.failure, Number(row.deleted));
      const deleted = Number(row?.deleted ?? 0);
      return {
        deleted,
        next: afterBatch(sweep, { taken: Number(row?.most ?? 0), batchSize, last: undefined }),
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

/**
 * A shard's batch failed (its worker down, say): the other shards' batches of the round stand, and the purge
 * stops here, since the next round would fail on that shard again.
 */
function shardFailed(failure: string, deletedElsewhere: number): ToolLedgerError {
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `A purge batch failed on a shard of the distributed ledger table: ${failure}. The other shards' batches (${deletedElsewhere} rows) and the batches before stay purged; call purgeExpired() again once every Citus worker is reachable.`,
    { retryable: true },
  );
}
