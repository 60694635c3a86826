import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  afterBatch,
  type HeapPosition,
  type PurgeSweep,
  parseTid,
  startSweep,
  TID_RANGE_SCAN_VERSION,
  tidText,
  windowBounds,
} from '../../../src/ledger/purge-sweep.js';

type Slot = 'expired' | 'live' | 'locked';

const before = (a: HeapPosition, b: HeapPosition) =>
  a.block < b.block || (a.block === b.block && a.offset < b.offset);

/**
 * The window statement as the model of a TID range scan: rows in heap order within [from, before), expired and
 * not locked by another purger, up to the batch size. Returns what it deleted and how many blocks it could read.
 */
function runWindow(
  heap: Slot[][],
  gone: Set<string>,
  sweep: Extract<PurgeSweep, { kind: 'window' }>,
  size: number,
) {
  const bounds = windowBounds(sweep);
  const from = parseTid(bounds.from);
  const end = parseTid(bounds.before);
  const taken: HeapPosition[] = [];
  for (let block = from.block; block < Math.min(end.block, heap.length) && taken.length < size; block++) {
    const slots = heap[block] ?? [];
    for (let offset = 1; offset <= slots.length && taken.length < size; offset++) {
      const at = { block, offset };
      if (before(at, from) || slots[offset - 1] !== 'expired' || gone.has(tidText(at))) continue;
      taken.push(at);
    }
  }
  for (const at of taken) gone.add(tidText(at));
  return { taken: taken.length, last: taken.at(-1), blocks: end.block - from.block };
}

describe('the purge sweep', () => {
  it('deletes every expired row once and nothing else, reading at most one window per batch', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.constantFrom<Slot>('expired', 'expired', 'live', 'locked'), { maxLength: 12 }), {
          maxLength: 40,
        }),
        fc.integer({ min: 1, max: 7 }),
        fc.integer({ min: 1, max: 9 }),
        (heap, windowBlocks, batchSize) => {
          const gone = new Set<string>();
          let sweep = startSweep(
            { serverVersion: TID_RANGE_SCAN_VERSION, heapBlocks: heap.length, partitioned: false },
            windowBlocks,
          );
          const expired = heap.flatMap((slots) => slots.filter((s) => s === 'expired')).length;
          const bound = Math.ceil(heap.length / windowBlocks) + Math.ceil(expired / batchSize) + 1;
          let batches = 0;
          while (sweep.kind === 'window') {
            const { taken, last, blocks } = runWindow(heap, gone, sweep, batchSize);
            expect(blocks).toBeLessThanOrEqual(windowBlocks);
            sweep = afterBatch(sweep, { taken, batchSize, last });
            batches++;
            expect(batches).toBeLessThanOrEqual(bound);
          }
          expect(sweep.kind).toBe('done');
          const expected = heap.flatMap((slots, block) =>
            slots.flatMap((slot, i) => (slot === 'expired' ? [tidText({ block, offset: i + 1 })] : [])),
          );
          expect([...gone].sort()).toEqual(expected.sort());
        },
      ),
    );
  });

  it('has nothing to do on an empty heap, and purges the whole table on PostgreSQL 13 or when partitioned', () => {
    const start = { serverVersion: TID_RANGE_SCAN_VERSION, heapBlocks: 0, partitioned: false };
    expect(startSweep(start, 4)).toEqual({ kind: 'done' });
    // A partitioned table's parent has no heap (its size is 0): it is purged as a whole, not skipped.
    expect(startSweep({ ...start, partitioned: true }, 4)).toEqual({ kind: 'whole-table' });
    const old = startSweep({ serverVersion: 130_012, heapBlocks: 1_000, partitioned: false }, 4);
    expect(old).toEqual({ kind: 'whole-table' });
    expect(afterBatch(old, { taken: 5, batchSize: 5, last: undefined })).toBe(old);
    expect(afterBatch(old, { taken: 4, batchSize: 5, last: undefined })).toEqual({ kind: 'done' });
  });

  it('reads tids as Postgres prints them', () => {
    expect(parseTid('(908199,33)')).toEqual({ block: 908199, offset: 33 });
    expect(() => parseTid('908199,33')).toThrow(TypeError);
  });
});
