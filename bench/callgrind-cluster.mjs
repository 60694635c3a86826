// A throwaway Postgres 15 cluster whose postmaster runs under callgrind, for bench/callgrind.mjs. Postgres forks its
// backends without exec, so each backend stays under valgrind and writes its own callgrind.out.<pid> when it exits.
// A forked child inherits the postmaster's counts, so collection is switched on only inside PostgresMain (the
// backend's own loop: parse, plan, execute, commit, socket reads and writes); what the postmaster and the
// connection's start-up do before it stays out. Autovacuum is off so that no worker's backend mixes in, and no
// checkpoint comes by time.
import { spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  freePort,
  initdb,
  makeClusterDir,
  poll,
  postgresArgs,
  runAs,
  stopProcess,
  waitForConnections,
} from './support/postgres-cluster.mjs';

export const PG_BIN = '/usr/lib/postgresql/15/bin';
const START_MS = 60_000;
const POLL_MS = 250;
const STOP_MS = 60_000;

/** The `totals:` line of a finished callgrind output file, or undefined while it is missing or being written. */
export function callgrindTotal(file) {
  if (!existsSync(file)) return undefined;
  const match = /^totals:\s+(\d+)/m.exec(readFileSync(file, 'utf8'));
  return match ? Number(match[1]) : undefined;
}

/**
 * Starts the cluster; `fn({ url, dir, backendInstructions })` runs against it, and the cluster and its directory
 * are removed afterwards whatever happens (also on SIGINT/SIGTERM of this process).
 */
export async function withCallgrindCluster(fn, extraSettings = {}) {
  const user = runAs();
  const dir = makeClusterDir('tool-ledger-callgrind-', { user });
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
    const data = join(dir, 'data');
    initdb(PG_BIN, data, { user });
    const port = await freePort();
    const log = join(dir, 'postgres.log');
    const settings = {
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
        ...postgresArgs({ data, port, socketDir: dir, settings }),
      ],
      { stdio: ['ignore', openSync(log, 'a'), openSync(log, 'a')], detached: true, ...user },
    );
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    // Everything runs under valgrind, start-up included: many times slower than natively.
    await waitForConnections(url, postmaster, {
      what: 'postgres under valgrind',
      timeoutMs: START_MS,
      intervalMs: POLL_MS,
      connectTimeoutMs: 5000,
    });

    /**
     * The instructions of every backend whose connection carried `application_name`, summed, and their files, once
     * they all have disconnected and callgrind has written the files.
     */
    const backendInstructions = async (applicationName, ms = 120_000) => {
      const pids = await poll(
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
        { timeoutMs: ms, intervalMs: POLL_MS, what: `the backends of ${applicationName} to disconnect` },
      );
      let sum = 0;
      const files = pids.map((pid) => join(dir, `callgrind.out.${pid}`));
      for (const file of files)
        sum += await poll(() => callgrindTotal(file), {
          timeoutMs: ms,
          intervalMs: POLL_MS,
          what: `callgrind's file ${file}`,
        });
      return { instructions: sum, files };
    };

    return await fn({ url, dir, backendInstructions });
  } finally {
    // The postmaster leads its own process group (detached): a SIGKILL to the group takes its backends along.
    if (postmaster) await stopProcess(postmaster, { signal: 'SIGINT', killAfterMs: STOP_MS, group: true });
    kill();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', kill);
  }
}
