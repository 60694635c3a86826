import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import * as pglite from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { openPGlite, type PGliteLike, pgliteDriver } from '../../src/ledger/drivers/pglite.js';
import { createInMemoryPGlite } from '../../src/ledger/drivers/pglite-template.js';

// PGlite has no checkpointer: without the driver's own checkpoints, every WAL segment written stays in the data
// directory (in memory for the embedded default) for the life of the process.
const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-pglite-wal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MiB = 2 ** 20;

async function walOnDisk(db: PGliteLike): Promise<{ segments: number; bytes: number }> {
  const { rows } = await db.query<{ segments: number; bytes: number }>(
    'SELECT count(*)::int AS segments, coalesce(sum(size), 0)::float8 AS bytes FROM pg_ls_waldir()',
  );
  return rows[0]!;
}

/** About 1.1 MB of WAL per statement: a thousand rows of 1 kB each. */
const WRITE_ABOUT_1MB = `INSERT INTO wal_filler SELECT g, repeat('x', 1000) FROM generate_series(1, 1000) g`;

describe('the PGlite driver bounds the WAL it keeps', () => {
  it('checkpoints once the WAL since the last checkpoint passes the bound, and old segments go', async () => {
    const db = await createInMemoryPGlite<PGlite>(pglite, join(dir, 'initdb.tar.gz'));
    const driver = pgliteDriver(db as unknown as PGliteLike, true, {
      checkEveryStatements: 4,
      checkpointAfterBytes: 4 * MiB,
    });
    await driver.query('CREATE TABLE wal_filler (id int, body text)');
    for (let i = 0; i < 60; i++) await driver.query(WRITE_ABOUT_1MB);
    const wal = await walOnDisk(db as unknown as PGliteLike);
    // 60 MB written; kept: the WAL since the last checkpoint (under the bound plus one look's worth) and the few
    // segments max_wal_size lets a checkpoint recycle.
    expect(wal.bytes).toBeLessThan(30 * MiB);
    expect((await driver.query<{ n: number }>('SELECT count(*)::int AS n FROM wal_filler')).rows[0]?.n).toBe(
      60_000,
    );
    await driver.close();
    expect(db.closed).toBe(true);
  });

  it('without the bound the same writes keep every segment (why the driver checkpoints)', async () => {
    const db = await createInMemoryPGlite<PGlite>(pglite, join(dir, 'initdb.tar.gz'));
    const driver = pgliteDriver(db as unknown as PGliteLike, true, {
      checkEveryStatements: Number.MAX_SAFE_INTEGER,
      checkpointAfterBytes: 4 * MiB,
    });
    await driver.query('CREATE TABLE wal_filler (id int, body text)');
    for (let i = 0; i < 30; i++) await driver.query(WRITE_ABOUT_1MB);
    expect((await walOnDisk(db as unknown as PGliteLike)).bytes).toBeGreaterThan(30 * MiB);
    await driver.close();
  });

  it('the in-memory cluster starts with WAL settings that keep few segments after a checkpoint, and a ledger on it answers as before', async () => {
    const db = await openPGlite('memory://');
    const { rows } = await db.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings WHERE name IN ('min_wal_size', 'max_wal_size') ORDER BY name`,
    );
    expect(rows).toEqual([
      { name: 'max_wal_size', setting: '16' },
      { name: 'min_wal_size', setting: '2' },
    ]);
    const ledger = await createLedger({ pglite: db, schema: 'wal_bound', telemetry: false });
    const tool = ledger.tool({
      name: 'note',
      kind: 'mutation',
      handler: (input) => ({ n: (input as { n: number }).n }),
    });
    for (let n = 0; n < 20; n++) expect(await tool.call({ n }, { key: `k${n}`, tenant: 't' })).toEqual({ n });
    expect(await tool.call({ n: 3 }, { key: 'k3', tenant: 't' })).toEqual({ n: 3 });
    await ledger.close();
    await db.close();
  });
});
