import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { PGlite } from '@electric-sql/pglite';
import * as pglite from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { readTar } from '../../src/ledger/drivers/pglite-tar.js';
import {
  createInMemoryPGlite,
  isSegmentAhead,
  type PGliteModule,
} from '../../src/ledger/drivers/pglite-template.js';

const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-template-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The real PGlite, with a note of which options each start was given. */
function observed(MemoryFS: PGliteModule['MemoryFS'] = pglite.MemoryFS): {
  module: PGliteModule;
  starts: string[][];
} {
  const starts: string[][] = [];
  const module: PGliteModule = {
    MemoryFS,
    PGlite: {
      defaultStartParams: pglite.PGlite.defaultStartParams,
      create: (options) => {
        starts.push(Object.keys(options ?? {}).sort());
        return pglite.PGlite.create(options);
      },
    },
  };
  return { module, starts };
}

/** The WAL segments of a saved cluster: how many, and how many of them are ahead of its history. */
function savedSegments(path: string): { segments: number; ahead: number } {
  const wal = readTar(gunzipSync(readFileSync(path))).filter(
    (e) => e.kind === 'file' && /^pg_wal\/[0-9A-F]{24}$/.test(e.path),
  );
  return { segments: wal.length, ahead: wal.filter(isSegmentAhead).length };
}

async function settings(db: PGlite): Promise<Record<string, string>> {
  const { rows } = await db.query<{ name: string; setting: string; unit: string | null }>(
    `SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers', 'wal_segment_size')`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, `${r.setting} ${r.unit ?? ''}`.trim()]));
}

describe('in-memory PGlite from a saved initdb', () => {
  it('falls back to initdb when the saved cluster is unreadable, saves a good one, and starts from it next time', async () => {
    const path = join(dir, 'initdb.tar.gz');
    writeFileSync(path, 'not a tarball');
    const { module, starts } = observed();
    const first = await createInMemoryPGlite<PGlite>(module, path);
    expect((await first.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    // 8 MB of shared buffers (1,024 pages of 8 kB), WAL in 1 MB segments: see docs/performance.md.
    expect(await settings(first)).toEqual({ shared_buffers: '1024 8kB', wal_segment_size: '1048576 B' });
    await first.close();
    const saved = readFileSync(path);
    // gzip magic bytes: the corrupt file was replaced by a real dump.
    expect([saved[0], saved[1]]).toEqual([0x1f, 0x8b]);
    expect(savedSegments(path)).toMatchObject({ ahead: 0 });
    expect(savedSegments(path).segments).toBeGreaterThan(0);

    const second = await createInMemoryPGlite<PGlite>(module, path);
    // The saved cluster was written in by the template's own file system, not PGlite's loader.
    expect(starts.at(-1)).toEqual(['fs', 'startParams']);
    expect(await settings(second)).toEqual({ shared_buffers: '1024 8kB', wal_segment_size: '1048576 B' });
    await second.query('CREATE TABLE t (x int, pad text)');
    // Enough rows to extend catalog and data files past what the archive held, through a checkpoint.
    await second.query(`INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g`);
    await second.query('CHECKPOINT');
    expect((await second.query<{ n: number }>('SELECT count(*)::int AS n FROM t')).rows).toEqual([
      { n: 20000 },
    ]);
    expect((await second.query<{ x: number }>('SELECT x FROM t WHERE x = 42')).rows).toEqual([{ x: 42 }]);
    await second.close();
    // Loading never writes back: the template stays the pristine initdb.
    expect(readFileSync(path).equals(saved)).toBe(true);
  });

  it("uses PGlite's own loader when the file-system path fails, and still starts from the saved cluster", async () => {
    const path = join(dir, 'fallback.tar.gz');
    const { module } = observed();
    await (await createInMemoryPGlite<PGlite>(module, path)).close();
    // A MemoryFS whose data directory cannot be filled: the fast path must give way, not fail the start.
    const { module: withoutFs, starts } = observed(
      class extends pglite.MemoryFS {
        override async initialSyncFs(): Promise<void> {
          throw new Error('no data directory');
        }
      },
    );
    const db = await createInMemoryPGlite<PGlite>(withoutFs, path);
    expect(starts).toEqual([
      ['fs', 'startParams'],
      ['loadDataDir', 'startParams'],
    ]);
    expect(await settings(db)).toEqual({ shared_buffers: '1024 8kB', wal_segment_size: '1048576 B' });
    await db.close();
  });
});

describe('in-memory PGlite saved once migrated', () => {
  it("starts a schema's second ledger migrated, without the first one's key-hash secret", async () => {
    const paths = { initdb: join(dir, 'm-initdb.tar.gz'), migrated: join(dir, 'm-migrated.tar.gz') };
    const { openInMemoryLedgerDb, pgliteDriver } = await import('../../src/ledger/drivers/pglite.js');
    const { applyMigrations } = await import('../../src/ledger/migrate.js');
    const { createLedger } = await import('../../src/index.js');
    const secretOf = async (db: PGlite) =>
      (
        await db.query<{ value: string }>(
          `SELECT value FROM "saved_m".tool_ledger_settings WHERE name = 'key_hash_secret'`,
        )
      ).rows[0]?.value;

    const first = await openInMemoryLedgerDb('saved_m', paths);
    expect(first.saveMigrated).toBeTypeOf('function');
    expect(await applyMigrations(pgliteDriver(first.db, false), 'saved_m')).not.toHaveLength(0);
    await first.saveMigrated?.();
    // The migrations had Postgres recycle segments ahead of the insert position (PGlite's own dump holds them);
    // the saved cluster holds none.
    const dump = await (first.db as unknown as PGlite).dumpDataDir('none');
    const dumped = readTar(new Uint8Array(await dump.arrayBuffer()));
    expect(dumped.filter(isSegmentAhead).length).toBeGreaterThan(0);
    expect(savedSegments(paths.migrated)).toMatchObject({ ahead: 0 });
    // What createLedger does next: the secret is made after the save, so it is not in the saved cluster.
    const firstLedger = await createLedger({ pglite: first.db as never, schema: 'saved_m' });
    const firstSecret = await secretOf(first.db as unknown as PGlite);
    await firstLedger.close();
    await first.db.close();

    const second = await openInMemoryLedgerDb('saved_m', paths);
    expect(second.saveMigrated).toBeUndefined();
    // Saved with the one database the ledger uses: initdb's two templates were dropped before the migrations.
    expect((await second.db.query<{ datname: string }>('SELECT datname FROM pg_database')).rows).toEqual([
      { datname: 'postgres' },
    ]);
    expect(await applyMigrations(pgliteDriver(second.db, false), 'saved_m')).toEqual([]);
    expect(await secretOf(second.db as unknown as PGlite)).toBeUndefined();
    const secondLedger = await createLedger({ pglite: second.db as never, schema: 'saved_m' });
    const tool = secondLedger.tool({ name: 'x', kind: 'mutation', handler: () => ({ ok: true }) });
    expect((await tool.invoke({}, { key: 'k' })).outcome).toBe('executed');
    const secondSecret = await secretOf(second.db as unknown as PGlite);
    expect(secondSecret).toMatch(/\S{16,}/);
    expect(secondSecret).not.toBe(firstSecret);
    await secondLedger.close();
    await second.db.close();

    // Another schema has a cluster of its own (not this one's tables).
    const other = await openInMemoryLedgerDb('saved_other', {
      ...paths,
      migrated: join(dir, 'm-other.tar.gz'),
    });
    expect(other.saveMigrated).toBeTypeOf('function');
    await other.db.close();
  });
});
