// A throwaway Postgres 15 cluster whose postmaster runs under callgrind, for bench/callgrind.mjs. Postgres forks its
// backends without exec, so each backend stays under valgrind and writes its own callgrind.out.<pid> when it exits.
// A forked child inherits the postmaster's counts, so collection is switched on only inside PostgresMain (the
// backend's own loop: parse, plan, execute, commit, socket reads and writes); what the postmaster and the
// connection's start-up do before it stays out. Autovacuum is off so that no worker's backend mixes in, and no
// checkpoint comes by time.
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export const PG_BIN = '/usr/lib/postgresql/15/bin';
const START_MS = 60_000;
const POLL_MS = 250;
const STOP_MS = 60_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Postgres refuses to run as root: then the cluster belongs to the `postgres` user. */
function runAs() {
  if (process.getuid?.() !== 0) return {};
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  return { uid: id('-u'), gid: id('-g') };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The `totals:` line of a finished callgrind output file, or undefined while it is missing or being written. */
export function callgrindTotal(file) {
  if (!existsSync(file)) return undefined;
  const match = /^totals:\s+(\d+)/m.exec(readFileSync(file, 'utf8'));
  return match ? Number(match[1]) : undefined;
}

/** Waits, bounded, until `probe()` returns something other than undefined. */
export async function waitFor(probe, ms, what) {
  const deadline = Date.now() + ms;
  for (let i = 0; Date.now() < deadline && i < ms / POLL_MS + 1; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(POLL_MS);
  }
  throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
}

/**
 * Starts the cluster; `fn({ url, dir, backendInstructions })` runs against it, and the cluster and its directory
 * are removed afterwards whatever happens (also on SIGINT/SIGTERM of this process).
 */
export async function withCallgrindCluster(fn, extraSettings = {}) {
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-callgrind-'));
  let postmaster;
  const kill = () => {
    // The postmaster leads its own process group (detached): the group takes its backends along.
    if (postmaster?.exitCode === null) {
      try {
        process.kill(-postmaster.pid, 'SIGKILL');
      } catch {}
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (signal) => {
    kill();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', kill);
  try {
    if (user.uid !== undefined) chownSync(dir, user.uid, user.gid);
    const data = join(dir, 'data');
    execFileSync(
      join(PG_BIN, 'initdb'),
      ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'],
      {
        stdio: 'ignore',
        timeout: 120_000,
        ...user,
      },
    );
    const port = await freePort();
    const log = join(dir, 'postgres.log');
    const settings = {
      listen_addresses: '127.0.0.1',
      autovacuum: 'off',
      huge_pages: 'off',
      jit: 'off',
      max_parallel_workers_per_gather: '0',
      // A checkpoint inside a run would add full-page images to the WAL of the calls after it.
      checkpoint_timeout: '1d',
      max_wal_size: '10GB',
      log_connections: 'on',
      log_disconnections: 'on',
      log_line_prefix: '%p [%a] ',
      ...extraSettings,
    };
    postmaster = spawn(
      'nice',
      [
        '-n',
        '19',
        'valgrind',
        '--tool=callgrind',
        '--trace-children=yes',
        '--collect-atstart=no',
        '--toggle-collect=PostgresMain',
        `--callgrind-out-file=${join(dir, 'callgrind.out.%p')}`,
        join(PG_BIN, 'postgres'),
        '-D',
        data,
        '-p',
        String(port),
        '-k',
        dir,
        ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
      ],
      { stdio: ['ignore', openSync(log, 'a'), openSync(log, 'a')], detached: true, ...user },
    );
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const accepts = async () => {
      if (postmaster.exitCode !== null)
        throw new Error(`postgres under valgrind exited (${postmaster.exitCode})`);
      const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
      probe.on('error', () => {});
      const ok = await probe.connect().then(
        () => probe.query('SELECT 1'),
        () => undefined,
      );
      await probe.end().catch(() => {});
      return ok ? true : undefined;
    };
    await waitFor(accepts, START_MS, 'postgres under valgrind to accept connections');

    /**
     * The instructions of every backend whose connection carried `application_name`, summed, and their files, once
     * they all have disconnected and callgrind has written the files.
     */
    const backendInstructions = async (applicationName, ms = 120_000) => {
      const pids = await waitFor(
        () => {
          const text = readFileSync(log, 'utf8');
          const opened = new Set();
          const closed = new Set();
          for (const m of text.matchAll(
            /^(\d+) \[.*?\] LOG: {2}connection authorized: .*application_name=(\S+)/gm,
          ))
            if (m[2] === applicationName) opened.add(m[1]);
          for (const m of text.matchAll(/^(\d+) \[([^\]]*)\] LOG: {2}disconnection:/gm))
            if (m[2] === applicationName) closed.add(m[1]);
          return opened.size > 0 && [...opened].every((p) => closed.has(p)) ? [...opened] : undefined;
        },
        ms,
        `the backends of ${applicationName} to disconnect`,
      );
      let sum = 0;
      const files = pids.map((pid) => join(dir, `callgrind.out.${pid}`));
      for (const file of files)
        sum += await waitFor(() => callgrindTotal(file), ms, `callgrind's file ${file}`);
      return { instructions: sum, files };
    };

    return await fn({ url, dir, backendInstructions });
  } finally {
    if (postmaster && postmaster.exitCode === null) {
      const exited = new Promise((resolve) => postmaster.once('exit', resolve));
      postmaster.kill('SIGINT');
      const timer = setTimeout(() => {
        try {
          process.kill(-postmaster.pid, 'SIGKILL');
        } catch {}
      }, STOP_MS);
      await exited;
      clearTimeout(timer);
    }
    kill();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', kill);
  }
}
