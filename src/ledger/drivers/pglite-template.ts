import { createHash, randomBytes } from 'node:crypto';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { MemoryFS } from '@electric-sql/pglite';
import { keepEntries, readTar, type TarEntry } from './pglite-tar.js';
import { PGLITE_WAL_SETTINGS } from './pglite-wal.js';

/**
 * Most of an in-memory PGlite's start-up is its initdb, which builds the same cluster every time. The first start
 * saves that cluster (a gzipped tarball, about 3.3 MB) under the OS temp directory, keyed by the PGlite version and
 * the cluster's shape; later starts load it instead of running initdb. Any failure to read or write it only costs
 * the slow start.
 */
export interface PGliteModule {
  readonly PGlite: {
    readonly defaultStartParams: readonly string[];
    create(options?: {
      loadDataDir?: Blob;
      fs?: MemoryFS;
      startParams?: string[];
      initDbStartParams?: string[];
    }): Promise<{ dumpDataDir(compression: 'none'): Promise<Blob> }>;
  };
  readonly MemoryFS: typeof MemoryFS;
}

/** The parts of Emscripten's file system used to fill the data directory. */
interface EmscriptenFS {
  mkdirTree(path: string): void;
  writeFile(path: string, data: Uint8Array, options: { canOwn: boolean }): void;
}

/**
 * initdb's WAL segment is 16 MB, held whole in memory by the in-memory file system; 1 MB segments (the least
 * initdb allows) keep the cluster at about 31 MB instead of 40 MB. Part of the template's key: a cluster saved
 * with other options is never loaded. `lean`: saved without the WAL segments ahead of its history
 * (`isSegmentAhead`), so a start no longer loads a cluster that holds them.
 */
const INITDB_ARGS = ['--wal-segsize=1'] as const;
const TEMPLATE_SHAPE = 'wal1-lean';

const WAL_SEGMENT = /^pg_wal\/[0-9A-F]{8}([0-9A-F]{8})([0-9A-F]{8})$/;
const WAL_LOG_BYTES = 0x1_0000_0000;

/**
 * A WAL segment that holds none of the cluster's history: one Postgres recycled at a checkpoint (renamed ahead of
 * the insert position, still holding an older segment's pages) or made ahead of it. Its first page does not carry
 * the segment's own address (`xlp_pageaddr`, bytes 8-15 of the page header, little-endian in WebAssembly). A start
 * reads only the segments up to its last checkpoint's record, and Postgres makes the next ones as it writes. The
 * migrations leave up to six of them, 6 MB of a 16 MB cluster that every start held in memory. When unsure
 * (another shape, a short file), the segment is kept.
 */
export function isSegmentAhead(entry: TarEntry): boolean {
  const name = entry.kind === 'file' ? WAL_SEGMENT.exec(entry.path) : null;
  const size = entry.data.length;
  if (!name || size < 16 || WAL_LOG_BYTES % size !== 0) return false;
  const segment =
    BigInt(Number.parseInt(name[1]!, 16)) * BigInt(WAL_LOG_BYTES / size) +
    BigInt(Number.parseInt(name[2]!, 16));
  const page = new DataView(entry.data.buffer, entry.data.byteOffset, 16);
  return page.getBigUint64(8, true) !== segment * BigInt(size);
}

/**
 * Server settings of an in-memory cluster, measured in docs/performance.md ("Embedded start"). Shared memory is
 * resident from the start: the WebAssembly memory holds about 14 MiB plus all of `shared_buffers` (128 MB in PGlite).
 * With the data files already in memory, shared buffers only save a copy from one memory to another: at 8 MB the
 * WebAssembly memory's resident size is 21 MiB instead of 152 MiB. `wal_buffers` follows (1/32 of it).
 */
const IN_MEMORY_SETTINGS = { shared_buffers: '8MB' } as const satisfies Record<string, string>;

/** The start parameters of an in-memory cluster: the settings above and the WAL's (pglite-wal.ts). */
function startParams(PGlite: PGliteModule['PGlite']): string[] {
  const settings = { ...IN_MEMORY_SETTINGS, ...PGLITE_WAL_SETTINGS };
  return [
    ...PGlite.defaultStartParams,
    ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ];
}

/**
 * Where the saved cluster lives: after initdb only, or (`migrated`) also with tool-ledger's tables in one schema at
 * one migration version, which saves a first start's migrations (a second or more of its start). A cluster saved
 * under another version or schema is never loaded.
 */
export async function templatePath(migrated?: {
  readonly schema: string;
  readonly version: number;
}): Promise<string | undefined> {
  try {
    // The package exports no package.json; its version sits beside the resolved entry's folder.
    const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
    const manifest = JSON.parse(await readFile(join(dirname(entry), '..', 'package.json'), 'utf8')) as {
      version?: unknown;
    };
    if (typeof manifest.version !== 'string' || !/^[\w.+-]+$/.test(manifest.version)) return undefined;
    const contents = migrated
      ? // `onedb`: saved without template0 and template1 (openInMemoryLedgerDb); a cluster saved with them is not loaded.
        `m${migrated.version}-onedb-${createHash('sha256').update(migrated.schema).digest('hex').slice(0, 16)}`
      : 'initdb';
    return join(tmpdir(), `tool-ledger-pglite-${manifest.version}-${TEMPLATE_SHAPE}-${contents}.tar.gz`);
  } catch {
    return undefined;
  }
}

/**
 * PGlite's own loader (`loadDataDir`) holds the archive three times over (gunzipped as chunks, joined, then one copy
 * per file) and looks every parent directory up again for each of the cluster's 1,000 files: about a second and,
 * through the allocator's fragmentation, some 40 MiB that stay resident. This in-memory file system writes the
 * cluster into the data directory before Postgres looks for it, each file a view into one archive buffer that the
 * file system takes over (`canOwn`): a file Postgres extends is copied out of it then.
 */
function templateFs(MemoryFSClass: typeof MemoryFS, archive: Promise<Uint8Array | undefined>): MemoryFS {
  return new (class extends MemoryFSClass {
    override async initialSyncFs(): Promise<void> {
      await super.initialSyncFs();
      const module = this.pg?.Module as { FS: EmscriptenFS; ENV: { PGDATA?: unknown } } | undefined;
      const root = module?.ENV.PGDATA;
      if (!module || typeof root !== 'string') throw new Error('PGlite exposes no data directory to fill');
      const made = new Set<string>();
      const mkdir = (path: string) => {
        if (made.has(path)) return;
        module.FS.mkdirTree(path);
        made.add(path);
      };
      const tar = await archive;
      if (!tar) throw new Error('the saved cluster does not unzip');
      mkdir(root);
      for (const entry of readTar(tar)) {
        const path = `${root}/${entry.path}`;
        if (entry.kind === 'directory') mkdir(path);
        else {
          mkdir(dirname(path));
          module.FS.writeFile(path, entry.data, { canOwn: true });
        }
      }
    }
  })();
}

/** A start from the saved cluster, or undefined when it cannot be loaded (the caller runs initdb). */
async function startFromSaved(
  { PGlite, MemoryFS }: PGliteModule,
  saved: Buffer,
  startParams: string[],
): Promise<unknown> {
  // Unzipped on the thread pool while PGlite compiles its WebAssembly; a bad file fails the start below.
  const archive = promisify(gunzip)(saved).catch(() => undefined);
  try {
    return await PGlite.create({ fs: templateFs(MemoryFS, archive), startParams });
  } catch {
    // PGlite's own loader next, in case this one no longer fits PGlite's internals.
  }
  const tar = await archive;
  if (!tar) return undefined;
  try {
    // Given unzipped: PGlite's own unzip leaves a rejection unhandled on a corrupt file.
    return await PGlite.create({ loadDataDir: new Blob([tar]), startParams });
  } catch {
    return undefined;
  }
}

/**
 * Saves a cluster, less the WAL segments ahead of its history (`isSegmentAhead`), under a unique name, then renames
 * it: a parallel start never reads half a file.
 */
export async function saveTemplate(
  db: { dumpDataDir(compression: 'none'): Promise<Blob> },
  path: string,
): Promise<void> {
  try {
    const partial = `${path}.${randomBytes(6).toString('hex')}.partial`;
    const dumped = new Uint8Array(await (await db.dumpDataDir('none')).arrayBuffer());
    let archive: Uint8Array = dumped;
    try {
      archive = keepEntries(dumped, (entry) => !isSegmentAhead(entry));
    } catch {
      // An archive this reader does not understand is saved as PGlite wrote it; its loader reads it.
    }
    await writeFile(partial, await promisify(gzip)(archive));
    await rename(partial, path).catch(() => unlink(partial));
  } catch {
    // The next start runs initdb (or the migrations) again.
  }
}

/** A start from the cluster saved at `path`, or undefined when there is none that loads. */
export async function loadTemplate<T>(pglite: PGliteModule, path: string): Promise<T | undefined> {
  const saved = await readFile(path).catch(() => undefined);
  if (!saved) return undefined;
  const db = await startFromSaved(pglite, saved, startParams(pglite.PGlite));
  if (!db) await unlink(path).catch(() => {});
  return (db ?? undefined) as T | undefined;
}

export async function createInMemoryPGlite<T>(
  pglite: PGliteModule,
  path: string | undefined = undefined,
): Promise<T> {
  path ??= await templatePath();
  if (path) {
    const loaded = await loadTemplate<T>(pglite, path);
    if (loaded) return loaded;
  }
  const db = await pglite.PGlite.create({
    startParams: startParams(pglite.PGlite),
    initDbStartParams: [...INITDB_ARGS],
  });
  if (path) await saveTemplate(db, path);
  return db as T;
}
