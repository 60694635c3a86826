import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createLedger, migrationSql, ToolLedgerError } from '../../../src/index.js';
import type { PgPoolLike } from '../../../src/ledger/drivers/pg/client.js';
import { readWriteClient } from '../../../src/ledger/drivers/read-write.js';
import { FAULT_OPTIONS } from './load.js';
import { type ReplicatedPair, startReplicatedPair } from './replication.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface FailoverMode {
  readonly name: string;
  readonly synchronous: boolean;
  readonly commit?: 'on' | 'remote_apply';
  /** Delay on the replication stream, ms (none by default: loopback). */
  readonly replicationDelayMs?: number;
  /**
   * How the ledger reaches the read-write node: a libpq multi-host URL with `target_session_attrs=read-write` given
   * to `createLedger` (what users write), or a `pg.Pool` of the test's own with `readWriteClient`. Either lists the
   * standby first, so the primary is reached only through the check.
   * @default 'url'
   */
  readonly via?: 'url' | 'readWriteClient';
}

export interface FailoverRow {
  readonly mode: string;
  readonly keys: number;
  /** Keys whose caller was told a success before the retry pass. */
  readonly acknowledged: number;
  /** Of those, acknowledged before the crash: written on the primary, though the standby is listed first. */
  readonly acknowledgedBeforeCrash: number;
  /** Handler runs beyond the first per key, after every key was retried once more on the promoted standby. */
  readonly duplicates: number;
  /** Acknowledged results the promoted standby does not hold (missing row, other result, not succeeded). */
  readonly lost: number;
  /** For lost results: how long before the crash the earliest of them was acknowledged (the window), ms. */
  readonly lostWindowMs: number;
  /**
   * From the crash to the first success of a fresh key, called from the moment of the crash and again every 50 ms
   * after each failure, beside the load. (It used to start when the load ended, 3 s after the crash, so it read
   * about 3 s whatever the ledger did.)
   */
  readonly recoverySeconds: number;
  /** Of that, from the crash until the standby answered as promoted (the rest is the ledger reconnecting). */
  readonly promotionSeconds: number;
  /** WAL the standby had not replayed when the primary crashed, bytes (read on the primary just before). */
  readonly standbyBehindBytes: number;
  /** Errors the callers saw, by code (they retried the retryable ones). */
  readonly notes: Readonly<Record<string, number>>;
}

/**
 * Load on a primary with a streaming standby; the primary crashes a second in and the standby is promoted at
 * once. The ledger reaches whichever node is read-write through a multi-host URL listing the standby first
 * (`target_session_attrs=read-write`), or `readWriteClient` over the same list (`mode.via`). Every key is then
 * retried once more, as an agent would, so a completion the standby lost shows as a second run.
 */
export async function runFailover(mode: FailoverMode, pair?: ReplicatedPair): Promise<FailoverRow> {
  const own = pair === undefined;
  const cluster = pair ?? (await startReplicatedPair({ replicationDelayMs: mode.replicationDelayMs }));
  const { primary, standby } = cluster;
  try {
    await cluster.configure(mode);
    await cluster.streaming(mode.synchronous);
    // The standby first: a ledger that ignored the target would land on it and fail every write.
    const hosts = [standby, primary].map((n) => ({ host: '127.0.0.1', port: n.port }));
    const url = `postgres://postgres@${hosts.map((h) => `${h.host}:${h.port}`).join(',')}/postgres?target_session_attrs=read-write`;
    const pools: pg.Pool[] = [];
    /** The ledger's database option: the URL, or a pool of the test's own with readWriteClient. */
    const database = () => {
      if ((mode.via ?? 'url') === 'url') return { connectionString: url };
      const pool = new pg.Pool({
        Client: readWriteClient(pg.Client, hosts, {
          hostConnectTimeoutMs: FAULT_OPTIONS.connectTimeoutSeconds * 1000,
        }),
        user: 'postgres',
        database: 'postgres',
        max: FAULT_OPTIONS.poolSize,
        connectionTimeoutMillis: FAULT_OPTIONS.connectTimeoutSeconds * 1000 * (hosts.length + 1),
        query_timeout: FAULT_OPTIONS.queryTimeoutSeconds * 1000,
        statement_timeout: FAULT_OPTIONS.statementTimeoutSeconds * 1000,
      } as unknown as pg.PoolConfig);
      pool.on('error', () => {});
      pools.push(pool);
      return { pool: pool as unknown as PgPoolLike as never };
    };
    const schema = `failover_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const { poolSize: _p, ...poolOptions } = FAULT_OPTIONS;
    const options = (mode.via ?? 'url') === 'url' ? FAULT_OPTIONS : poolOptions;
    // The schema is made first through a pool without the fault timeouts: over a slow synchronous link the
    // migration's commits can outlast queryTimeoutSeconds, and setting up is not what is measured.
    const setup = new pg.Pool({
      Client: readWriteClient(pg.Client, hosts),
      user: 'postgres',
      database: 'postgres',
      max: 1,
    } as unknown as pg.PoolConfig);
    setup.on('error', () => {});
    try {
      // The printed migration script, as a DBA applies it: a ledger started here would warn of the standby too.
      await setup.query(migrationSql(schema));
    } finally {
      await setup.end();
    }
    const ledger = await createLedger({ ...options, ...database(), schema, migrate: false });
    // The schema must have reached the standby before the fault: with a delayed asynchronous link the migration's
    // commit can still be in flight, and a promotion then loses the table itself, which is not what is measured.
    for (const until = Date.now() + 20_000; Date.now() < until; ) {
      const [seen] = await standby
        .sql<{ ok: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS ok`, [`"${schema}".tool_runs`])
        .catch(() => [{ ok: false }]);
      if (seen?.ok) break;
      await sleep(50);
    }
    const runs = new Map<string, number>();
    const notes: Record<string, number> = {};
    const note = (name: string) => {
      notes[name] = (notes[name] ?? 0) + 1;
    };
    const chargeOn = (on: typeof ledger) =>
      on.tool({
        name: 'charge',
        kind: 'mutation',
        handler: async (_input: unknown, ctx) => {
          runs.set(ctx.key as string, (runs.get(ctx.key as string) ?? 0) + 1);
          await sleep(30);
          return { execId: randomUUID() };
        },
      });
    let tool = chargeOn(ledger);
    const acked = new Map<string, { execId: string; at: number }>();
    const deadline = Date.now() + 60_000;
    const drive = async (key: string) => {
      for (let attempt = 0; attempt < 300 && Date.now() < deadline; attempt++) {
        try {
          const value = (await tool.call({}, { key })) as { execId: string };
          if (!acked.has(key)) acked.set(key, { execId: value.execId, at: Date.now() });
          return;
        } catch (error) {
          if (!(error instanceof ToolLedgerError)) {
            note('untyped');
            return;
          }
          note(error.code);
          if (!error.retryable) return;
          await sleep(Math.min(error.retryAfterMs ?? 100, 250));
        }
      }
    };
    const keys: string[] = [];
    const drivers: Promise<void>[] = [];
    const started = Date.now();
    let crashAt = 0;
    let promotedAt = 0;
    let standbyBehindBytes = Number.NaN;
    let failover: Promise<void> | undefined;
    let recovery: Promise<number> | undefined;
    const probe = async () => {
      for (let i = 0; Date.now() < deadline; i++) {
        try {
          await tool.call({}, { key: `probe-${i}` });
          return (Date.now() - crashAt) / 1000;
        } catch {
          await sleep(50);
        }
      }
      return Number.NaN;
    };
    for (let i = 0; Date.now() - started < 4000; i++) {
      if (!failover && Date.now() - started >= 1000) {
        crashAt = Date.now();
        failover = primary
          .sql<{ behind: string | null }>(
            'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::text AS behind FROM pg_catalog.pg_stat_replication',
          )
          .then(
            ([row]) => {
              standbyBehindBytes = Number(row?.behind ?? Number.NaN);
            },
            () => {},
          )
          .then(() => cluster.crashPrimary())
          .then(() => cluster.promote())
          .then(() => {
            promotedAt = Date.now();
          });
        recovery = probe();
      }
      const key = `k${i}`;
      keys.push(key);
      drivers.push(drive(key), drive(key));
      await sleep(25);
    }
    await failover;
    const recoverySeconds = (await recovery) ?? Number.NaN;
    await Promise.all(drivers);
    const acknowledged = acked.size;
    const acknowledgedBeforeCrash = [...acked.values()].filter(({ at }) => at < crashAt).length;
    // What the promoted standby holds decides whether an acknowledged result was lost.
    const rows = await standby.sql<{ key: string; status: string; exec: string }>(
      `SELECT idempotency_key AS key, status, result_json->>'execId' AS exec FROM "${schema}".tool_runs WHERE tool_name = 'charge'`,
    );
    const stored = new Map(rows.map((r) => [r.key, r]));
    let lost = 0;
    let earliestLost = Number.POSITIVE_INFINITY;
    for (const [key, { execId, at }] of acked) {
      const row = stored.get(key);
      if (row?.status !== 'succeeded' || row.exec !== execId) {
        lost++;
        earliestLost = Math.min(earliestLost, at);
      }
    }
    // The retry pass: one more call per key, as an agent's retry would make, from another process (a ledger of its
    // own: this one's replay cache would answer from memory what the standby lost).
    const retrier = await createLedger({ ...options, ...database(), schema });
    tool = chargeOn(retrier);
    await Promise.all(keys.map((key) => drive(key)));
    await retrier.close({ timeoutSeconds: 2 });
    let duplicates = 0;
    for (const key of keys) duplicates += Math.max(0, (runs.get(key) ?? 0) - 1);
    await ledger.close({ timeoutSeconds: 2 });
    for (const pool of pools) await pool.end().catch(() => {});
    return {
      mode: mode.name,
      keys: keys.length,
      acknowledged,
      acknowledgedBeforeCrash,
      duplicates,
      lost,
      lostWindowMs: lost > 0 ? Math.max(0, crashAt - earliestLost) : 0,
      recoverySeconds,
      promotionSeconds: (promotedAt - crashAt) / 1000,
      standbyBehindBytes,
      notes,
    };
  } finally {
    if (own) await cluster.destroy();
  }
}
