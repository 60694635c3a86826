import { randomBytes } from 'node:crypto';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Most of an in-memory PGlite's start-up is its initdb, which builds the same cluster every time. The first start
 * saves that cluster (a gzipped tarball, about 4.5 MB) under the OS temp directory, keyed by the PGlite version;
 * later starts load it instead of running initdb. Any failure to read or write it only costs the slow start.
 */
interface PGliteStatic {
  create(options?: { loadDataDir?: Blob }): Promise<{ dumpDataDir(compression: 'gzip'): Promise<Blob> }>;
}

async function templatePath(): Promise<string | undefined> {
  try {
    // The package exports no package.json; its version sits beside the resolved entry's folder.
    const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
    const manifest = JSON.parse(await readFile(join(dirname(entry), '..', 'package.json'), 'utf8')) as {
      version?: unknown;
    };
    if (typeof manifest.version !== 'string' || !/^[\w.+-]+$/.test(manifest.version)) return undefined;
    return join(tmpdir(), `tool-ledger-pglite-${manifest.version}-initdb.tar.gz`);
  } catch {
    return undefined;
  }
}

export async function createInMemoryPGlite<T>(
  PGlite: PGliteStatic,
  path: string | undefined = undefined,
): Promise<T> {
  path ??= await templatePath();
  if (path) {
    const saved = await readFile(path).catch(() => undefined);
    if (saved) {
      try {
        return (await PGlite.create({ loadDataDir: new Blob([saved]) })) as T;
      } catch {
        await unlink(path).catch(() => {});
      }
    }
  }
  const db = await PGlite.create();
  if (path) {
    try {
      // Written whole under a unique name, then renamed: a parallel start never reads half a file.
      const partial = `${path}.${randomBytes(6).toString('hex')}.partial`;
      await writeFile(partial, Buffer.from(await (await db.dumpDataDir('gzip')).arrayBuffer()));
      await rename(partial, path).catch(() => unlink(partial));
    } catch {
      // Next start runs initdb again.
    }
  }
  return db as T;
}
