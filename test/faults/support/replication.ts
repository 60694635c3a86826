import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../ops/support/processes.js';
import { type FaultProxy, startProxy } from './proxy.js';

/**
 * Two Postgres clusters of the test's own on loopback, a primary and a streaming standby made with pg_basebackup,
 * for failover under load: the primary can be crashed and the standby promoted. Debian's binaries
 * (/usr/lib/postgresql/<version>/bin); never the shared server.
 */
export interface Node {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  sql<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
}

export interface ReplicatedPair {
  readonly primary: Node;
  readonly standby: Node;
  /** `synchronous`: the standby is named in synchronous_standby_names, with `synchronous_commit` as given. */
  configure(mode: { readonly synchronous: boolean; readonly commit?: 'on' | 'remote_apply' }): Promise<void>;
  /** Waits until the standby streams (and, when synchronous, is the sync standby). */
  streaming(synchronous: boolean): Promise<void>;
  /** The primary dies without a shutdown: `pg_ctl stop -m immediate`, as a crash or a lost machine. */
  crashPrimary(): Promise<void>;
  /** Promotes the standby and waits until it accepts writes. */
  promote(): Promise<void>;
  destroy(): Promise<void>;
}

export const STANDBY_NAME = 'standby1';

export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_basebackup')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

export const POSTGRES_MISSING = 'Postgres server binaries are not installed: apt-get install postgresql';

function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function node(name: string, port: number): Node & { end(): Promise<void> } {
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let pool: pg.Pool | undefined;
  const get = () => {
    if (!pool) {
      pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 2000 });
      pool.on('error', () => {});
    }
    return pool;
  };
  return {
    name,
    port,
    url,
    async sql(text, params) {
      try {
        return (await get().query(text, params)).rows;
      } catch (error) {
        // A pool whose server died holds dead clients: start a fresh one next time.
        const old = pool;
        pool = undefined;
        await old?.end().catch(() => {});
        throw error;
      }
    },
    async end() {
      await pool?.end().catch(() => {});
      pool = undefined;
    },
  };
}

async function accepting(url: string, child: ChildProcess, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode} while starting`);
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
  throw new Error(`${what} did not accept connections within 15 s`);
}

export interface PairOptions {
  /**
   * Delay on the replication stream (a loopback proxy between the standby and the primary), as a standby in
   * another zone has: what an asynchronous standby can lose on a crash grows with it.
   */
  readonly replicationDelayMs?: number;
}

export async function startReplicatedPair(pairOptions: PairOptions = {}): Promise<ReplicatedPair> {
  const bin = postgresBin();
  if (!bin) throw new Error(POSTGRES_MISSING);
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-failover-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const primaryData = join(dir, 'primary');
  const standbyData = join(dir, 'standby');
  execFileSync(
    join(bin, 'initdb'),
    ['-D', primaryData, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'],
    {
      stdio: 'ignore',
      ...user,
    },
  );
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const settings = (port: number) => [
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'wal_level=replica',
    '-c',
    'max_wal_senders=4',
    '-c',
    'hot_standby=on',
    '-c',
    'max_connections=60',
    '-c',
    'shared_buffers=32MB',
    // fsync stays on: a crash must lose exactly what Postgres would lose, no more.
  ];
  const children: ChildProcess[] = [];
  const start = async (data: string, port: number, what: string) => {
    const child = spawn(join(bin, 'postgres'), ['-D', data, ...settings(port)], { stdio: 'ignore', ...user });
    children.push(child);
    await accepting(`postgres://postgres@127.0.0.1:${port}/postgres`, child, what);
    return child;
  };
  const primaryProcess = await start(primaryData, primaryPort, 'the primary');
  execFileSync(
    join(bin, 'pg_basebackup'),
    ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standbyData, '-X', 'stream', '-R'],
    { stdio: 'ignore', ...user },
  );
  let link: FaultProxy | undefined;
  if (pairOptions.replicationDelayMs) {
    link = await startProxy(primaryPort);
    link.delayMs = pairOptions.replicationDelayMs;
    link.mode = 'delay';
  }
  // pg_basebackup -R wrote primary_conninfo; the application_name is what synchronous_standby_names names.
  appendFileSync(
    join(standbyData, 'postgresql.auto.conf'),
    `primary_conninfo = 'host=127.0.0.1 port=${link?.port ?? primaryPort} user=postgres application_name=${STANDBY_NAME}'\n`,
  );
  await start(standbyData, standbyPort, 'the standby');
  const primary = node('primary', primaryPort);
  const standby = node('standby', standbyPort);

  return {
    primary,
    standby,
    async configure({ synchronous, commit = 'on' }) {
      await primary.sql(`ALTER SYSTEM SET synchronous_standby_names = '${synchronous ? STANDBY_NAME : ''}'`);
      await primary.sql(`ALTER SYSTEM SET synchronous_commit = '${synchronous ? commit : 'on'}'`);
      await primary.sql('SELECT pg_reload_conf()');
    },
    async streaming(synchronous) {
      for (let i = 0; i < 200; i++) {
        const rows = await primary.sql<{ state: string; sync_state: string }>(
          'SELECT state, sync_state FROM pg_catalog.pg_stat_replication',
        );
        if (rows.some((r) => r.state === 'streaming' && (synchronous ? r.sync_state === 'sync' : true)))
          return;
        await sleep(50);
      }
      throw new Error('the standby did not start streaming within 10 s');
    },
    async crashPrimary() {
      await primary.end();
      execFileSync(join(bin, 'pg_ctl'), ['stop', '-D', primaryData, '-m', 'immediate', '-w'], {
        stdio: 'ignore',
        ...user,
      });
      await new Promise((resolve) =>
        primaryProcess.exitCode === null ? primaryProcess.once('exit', resolve) : resolve(0),
      );
    },
    async promote() {
      await standby.sql('SELECT pg_promote(true, 30)');
      for (let i = 0; i < 200; i++) {
        const [row] = await standby.sql<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
        if (row?.standby === false) return;
        await sleep(50);
      }
      throw new Error('the standby was not promoted within 10 s');
    },
    async destroy() {
      await link?.close();
      await primary.end();
      await standby.end();
      for (const child of children) {
        if (child.exitCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGQUIT');
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await exited;
          clearTimeout(timer);
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
