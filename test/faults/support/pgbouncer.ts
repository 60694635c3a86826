import { spawn } from 'node:child_process';
import { chownSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  freePort,
  makeClusterDir,
  runAs,
  stopProcess,
  waitForConnections,
} from '../../../bench/support/postgres-cluster.mjs';

/**
 * A PgBouncer of the test's own, in transaction mode, on a loopback port, in front of a Postgres the test started.
 * Debian's `pgbouncer` package (1.18 on bookworm): the version the issue reproduced the failures with, which does
 * not track prepared statements (1.21 added `max_prepared_statements`).
 */
export interface Bouncer {
  readonly port: number;
  /** A URL to the bouncer for `database` (the server's `postgres` by default). */
  url(database?: string): string;
  stop(): Promise<void>;
}

const CANDIDATES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'];

/** The binary, or undefined when Debian's `pgbouncer` package is not installed. */
export function pgbouncerBinary(): string | undefined {
  return CANDIDATES.find((path) => existsSync(path));
}

export const PGBOUNCER_MISSING = 'pgbouncer is not installed: apt-get install pgbouncer';

/**
 * True when tests that need PgBouncer should be skipped (it is absent and this is not CI). Under `CI=true` an absent
 * PgBouncer fails the test instead, so CI cannot pass by skipping it.
 */
export function skipWithoutPgbouncer(): boolean {
  if (pgbouncerBinary() !== undefined) return false;
  if (process.env.CI === 'true') return false;
  console.warn(`skipped: ${PGBOUNCER_MISSING}`);
  return true;
}

export interface BouncerOptions {
  /** Server connections per database and user. */
  readonly poolSize?: number;
  readonly poolMode?: 'transaction' | 'session';
}

export async function startPgbouncer(serverPort: number, options: BouncerOptions = {}): Promise<Bouncer> {
  const binary = pgbouncerBinary();
  if (binary === undefined) throw new Error(PGBOUNCER_MISSING);
  const user = runAs();
  // PgBouncer refuses to run as root: as `postgres` then, as the fault server's Postgres runs.
  const dir = makeClusterDir('tool-ledger-pgbouncer-', { user });
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  const users = join(dir, 'users.txt');
  writeFileSync(users, '"postgres" ""\n');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${serverPort}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      'auth_type = trust',
      `auth_file = ${users}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 10}`,
      'max_client_conn = 500',
      // pg sends these as startup parameters. PgBouncer refuses unknown ones; ignoring them means a statement
      // timeout must be set on the role or database instead (docs/operations.md says so).
      'ignore_startup_parameters = extra_float_digits, statement_timeout, options',
      // A server connection that died with its Postgres is noticed and replaced at once.
      'server_check_delay = 0',
      'server_login_retry = 1',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  if (user) {
    chownSync(ini, user.uid, user.gid);
    chownSync(users, user.uid, user.gid);
  }
  const child = spawn(binary, [ini], { stdio: 'ignore', ...user });
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  await waitForConnections(url(), child, { what: 'pgbouncer', timeoutMs: 10_000 });
  return {
    port,
    url,
    async stop() {
      await stopProcess(child, { signal: 'SIGTERM', killAfterMs: 5000 });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
