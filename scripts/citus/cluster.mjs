// A Citus cluster of a test's or a bench's own: a coordinator and workers, each a throwaway Postgres
// (bench/support/postgres-cluster.mjs) on its own loopback port and data directory, with Citus built by
// scripts/citus/build.sh from the vendored tree. Never the shared server.
//
//   node scripts/citus/cluster.mjs        start one, print the coordinator's URL, stop it on Ctrl-C
//
// The servers run from a private copy of Debian's PostgreSQL 15 tree (bin, lib, share: about 60 MB, copied in
// well under a second) with Citus's files laid over it, in the cluster's own temporary directory: PostgreSQL finds
// its lib and share directories relative to its own binary, so nothing is installed under /usr and no root is
// needed. As root the servers run as the `postgres` user, which cannot read root's home where the build is cached:
// the copy is what makes the cached build usable then.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createCluster, runAs } from '../../bench/support/postgres-cluster.mjs';
import { root, withDatabase } from '../lane.mjs';
export const PG_MAJOR = 15;
const DEBIAN_LIB = `/usr/lib/postgresql/${PG_MAJOR}`;
const DEBIAN_SHARE = `/usr/share/postgresql/${PG_MAJOR}`;
/** build.sh's exit status when the vendored tarball is absent (no ../shared beside the checkout). */
const BUILD_SKIPPED = 3;

/**
 * The cached Citus install (build.sh's `make install DESTDIR`), building it first when missing (minutes, once per
 * machine), or `{ skipped }` with build.sh's one line when the vendored tree is absent.
 */
export function citusInstall() {
  const build = spawnSync('bash', [join(root, 'scripts/citus/build.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    // A cold build is minutes on 2 cores; a hung one must not hang the lane.
    timeout: 30 * 60_000,
  });
  if (build.status === BUILD_SKIPPED) return { skipped: build.stderr.trim() };
  if (build.status !== 0)
    throw new Error(`scripts/citus/build.sh failed (${build.status ?? build.signal}):\n${build.stderr}`);
  // Its progress lines go to stderr; the install folder is its last line of stdout.
  if (build.stderr.trim()) process.stderr.write(build.stderr);
  return { dir: build.stdout.trim().split('\n').at(-1) };
}

/** Debian's PostgreSQL 15 copied under `dir` with Citus over it; returns the copy's bin directory. */
export function privateTree(install, dir) {
  if (!existsSync(join(DEBIAN_LIB, 'bin', 'postgres')))
    throw new Error(`${DEBIAN_LIB}/bin/postgres is missing: apt-get install postgresql-${PG_MAJOR}`);
  const lib = join(dir, DEBIAN_LIB);
  const share = join(dir, DEBIAN_SHARE);
  cpSync(DEBIAN_LIB, lib, { recursive: true, verbatimSymlinks: true });
  cpSync(DEBIAN_SHARE, share, { recursive: true, verbatimSymlinks: true });
  cpSync(join(install, DEBIAN_LIB), lib, { recursive: true });
  cpSync(join(install, DEBIAN_SHARE), share, { recursive: true });
  return join(lib, 'bin');
}

/**
 * Settings of every node: Citus loaded, no fsync (the cluster is thrown away; the OS keeps what a crashed server
 * wrote), room for the suites' pools and the connections Citus opens between nodes. synchronous_commit stays on:
 * a worker stopped like a crash (test/citus/worker-lost.test.ts) would otherwise lose commits the ledger reported.
 */
const NODE_SETTINGS = {
  shared_preload_libraries: 'citus',
  fsync: 'off',
  full_page_writes: 'off',
  max_connections: '300',
  shared_buffers: '64MB',
  // Between nodes on loopback, without TLS: Citus's default (sslmode=require) makes libpq look for a client
  // certificate in $HOME/.postgresql, which is root's home when this runs as root, unreadable to the servers.
  'citus.node_conninfo': 'sslmode=disable',
};

async function sql(url, statements) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Starts a coordinator and `workers` workers (2 by default), each with database `database` holding the citus
 * extension, the workers added to the coordinator's metadata. `shardCount` sets `citus.shard_count` on the
 * coordinator (Citus's default is 32; a test lane that makes a schema per test makes fewer shards with fewer).
 * Throws `{ skipped }` never: callers check `citusInstall()` first.
 */
export async function startCitusCluster(options = {}) {
  const { workers: workerCount = 2, database = 'test', shardCount, settings = {}, install } = options;
  const citus = install ?? citusInstall();
  if (citus.skipped) throw new Error(citus.skipped);
  const user = runAs();
  const treeDir = mkdtempSync(join(tmpdir(), 'tool-ledger-citus-tree-'));
  // mkdtemp makes it 0700: the servers' user (postgres, when this is root) must reach the binaries in it.
  chmodSync(treeDir, 0o755);
  const nodes = [];
  const destroy = async () => {
    await Promise.allSettled(nodes.map((node) => node.destroy('immediate')));
    rmSync(treeDir, { recursive: true, force: true });
  };
  try {
    const bin = privateTree(citus.dir, treeDir);
    const make = (what, extra) =>
      createCluster({ bin, prefix: 'tool-ledger-citus-', what, settings: { ...NODE_SETTINGS, ...extra } });
    const coordinatorSettings = shardCount === undefined ? {} : { 'citus.shard_count': String(shardCount) };
    const made = await Promise.all([
      make('the Citus coordinator', { ...coordinatorSettings, ...settings }),
      ...Array.from({ length: workerCount }, (_, i) => make(`Citus worker ${i + 1}`, settings)),
    ]);
    nodes.push(...made);
    await Promise.all(made.map((node) => node.start()));
    await Promise.all(made.map((node) => sql(node.url, [`CREATE DATABASE ${database}`])));
    await Promise.all(made.map((node) => sql(withDatabase(node.url, database), ['CREATE EXTENSION citus'])));
    const [coordinator, ...workerNodes] = made;
    const url = withDatabase(coordinator.url, database);
    await sql(url, [
      `SELECT citus_set_coordinator_host('127.0.0.1', ${coordinator.port})`,
      ...workerNodes.map((w) => `SELECT citus_add_node('127.0.0.1', ${w.port})`),
    ]);
    return {
      url,
      coordinator,
      workers: workerNodes.map((node) => ({ node, port: node.port, url: withDatabase(node.url, database) })),
      user,
      destroy,
    };
  } catch (error) {
    await destroy();
    throw error;
  }
}

// Run directly: a cluster for a developer's own use until Ctrl-C.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const citus = citusInstall();
  if (citus.skipped) {
    console.error(citus.skipped);
    process.exit(0);
  }
  const cluster = await startCitusCluster({ install: citus });
  console.log(`Citus coordinator: ${cluster.url}`);
  for (const [i, w] of cluster.workers.entries()) console.log(`Citus worker ${i + 1}: ${w.url}`);
  console.log('Ctrl-C stops and removes it.');
  await new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await cluster.destroy();
}
