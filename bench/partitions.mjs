// Partitioned layout against the table layout at scale: purge cost and claim latency with BENCH_PARTITION_ROWS rows
// (default 10,000,000) in tool_runs. Each layout gets the same rows: expiries spread evenly over the hours from
// BENCH_PARTITION_EXPIRED_HOURS (default 2) ago to a day after that, in partitions BENCH_PARTITION_WIDTH_SECONDS
// wide (default 3600), so the purge finds that many hours of expired rows. Measured per layout:
//   - claim latency, p50 and p99 over BENCH_PARTITION_CALLS (default 2000) sequential calls, of a fresh key (claim and
//     completion: a first execution) and of an existing key (the claim alone: a replay from another process);
//   - the purge: wall time, WAL written, and the size of the key index before and after (row-by-row deletion
//     leaves its pages behind; a dropped partition takes its index with it).
// Runs on a Postgres of its own (Debian's PG 15 binaries, data directory under BENCH_PARTITION_DIR, default
// /work/.bench-partitions or the OS temp dir), never the shared server. Needs `npm run build`.
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createLedger } from '../dist/index.js';
import { startCluster } from './support/postgres-cluster.mjs';

const ROWS = Number(process.env.BENCH_PARTITION_ROWS ?? 10_000_000);
const EXPIRED_HOURS = Number(process.env.BENCH_PARTITION_EXPIRED_HOURS ?? 2);
const CALLS = Number(process.env.BENCH_PARTITION_CALLS ?? 2000);
const CHUNK = 1_000_000;
const HOUR = 3600;
const WIDTH = Number(process.env.BENCH_PARTITION_WIDTH_SECONDS ?? HOUR);
const BIN = '/usr/lib/postgresql/15/bin';

async function startPostgres() {
  if (!existsSync(join(BIN, 'postgres'))) throw new Error(`bench/partitions.mjs needs Postgres 15 in ${BIN}`);
  const cluster = await startCluster({
    bin: BIN,
    root: process.env.BENCH_PARTITION_DIR ?? (existsSync('/work') ? '/work/.bench-partitions' : tmpdir()),
    prefix: 'pg-',
    settings: {
      shared_buffers: '1GB',
      max_wal_size: '16GB',
      checkpoint_timeout: '30min',
      maintenance_work_mem: '512MB',
      // Autovacuum would run during the measured purge on one side only: off, and VACUUM by hand after the load.
      autovacuum: 'off',
    },
    // The shutdown checkpoint after a load of millions of rows takes a while; the directory goes anyway.
    killAfterMs: 120_000,
  });
  return { url: cluster.url, stop: () => cluster.destroy('fast') };
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
const ms = (n) => n.toFixed(2);

/**
 * Fills `schema`.tool_runs with ROWS completed runs, in chunks (one statement each), each with the parameter hash
 * of the arguments the measured calls send, so a call on a loaded key replays it.
 */
async function load(admin, schema, parameterHash) {
  const started = performance.now();
  for (let from = 0; from < ROWS; from += CHUNK) {
    const to = Math.min(ROWS, from + CHUNK) - 1;
    await admin.query(
      `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, final,
         attempt, result_json, created_at, started_at, updated_at, completed_at, expires_at)
       SELECT 'tenant_' || (g % 100), 'charge', 'key-' || g, $5::text, 'succeeded', true, 1,
         json_build_object('ok', true, 'n', g), now(), now(), now(), now(),
         now() - make_interval(hours => $3) + make_interval(secs => (g::float8 / $4) * 86400)
       FROM generate_series($1::bigint, $2::bigint) g`,
      [from, to, EXPIRED_HOURS, ROWS, parameterHash],
    );
  }
  await admin.query(`VACUUM ANALYZE "${schema}".tool_runs`);
  return (performance.now() - started) / 1000;
}

async function keyIndexBytes(admin, schema, layout) {
  // The table layout's key index is its primary key since migration 8; the partitioned key index is the sum of its
  // partitions' (they inherit from it).
  const { rows } = await admin.query(
    layout === 'table'
      ? `SELECT pg_relation_size('"${schema}".tool_runs_pkey')::bigint AS bytes`
      : `SELECT coalesce(sum(pg_relation_size(inhrelid)), 0)::bigint AS bytes FROM pg_inherits
         WHERE inhparent = '"${schema}".tool_runs_key_idx'::regclass`,
  );
  return Number(rows[0].bytes);
}

/** `runOf(i)` names the i-th call's key and the number its tenant is named after. */
async function latencies(tool, runOf) {
  const samples = [];
  for (let i = 0; i < CALLS; i++) {
    const { key, tenant } = runOf(i);
    const started = performance.now();
    await tool.invoke({}, { key, tenant: `tenant_${tenant}` });
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function measure(url, layout) {
  const schema = `bench_${layout}`;
  const options = {
    connectionString: url,
    schema,
    telemetry: false,
    replayCacheEntries: 0,
    ttlSeconds: 86_400,
    layout,
    ...(layout === 'partitioned' ? { partitionWidthSeconds: WIDTH } : {}),
  };
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  // When a measurement fails, the server stops before this pool ends: the failure is what to report, not that.
  admin.on('error', () => {});
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  let ledger = await createLedger(options);
  if (layout === 'partitioned') {
    await admin.query(
      `SELECT count(*) FROM "${schema}".tool_ledger_ensure_partitions(now() - make_interval(hours => $1), now() + interval '26 hours')`,
      [EXPIRED_HOURS + 1],
    );
  }
  // The handler returns at once, so the latency is the ledger's: its statements and their round trips.
  const toolOf = (of) => of.tool({ name: 'charge', kind: 'mutation', handler: () => ({ ok: true }) });
  // One call, for the hash the ledger stores for the measured calls' arguments; its row goes before the load.
  await toolOf(ledger).invoke({}, { key: 'probe', tenant: 'tenant_probe' });
  const probe = `"${schema}".tool_runs WHERE tenant_id = 'tenant_probe'`;
  const { parameter_hash: parameterHash } = (await admin.query(`SELECT parameter_hash FROM ${probe}`))
    .rows[0];
  await admin.query(`DELETE FROM ${probe}`);
  await ledger.close();
  const loadSeconds = await load(admin, schema, parameterHash);
  ledger = await createLedger(options);
  const tool = toolOf(ledger);
  // Existing keys are unexpired loaded rows (the newest ones), in the tenant the load gave each; fresh keys are new.
  const loaded = (g) => ({ key: `key-${g}`, tenant: g % 100 });
  const existing = await latencies(tool, (i) => loaded(ROWS - 1 - i));
  const fresh = await latencies(tool, (i) => ({ key: `fresh-${i}`, tenant: i % 100 }));
  const expired = Number(
    (await admin.query(`SELECT count(*)::bigint AS n FROM "${schema}".tool_runs WHERE expires_at <= now()`))
      .rows[0].n,
  );
  const indexBefore = await keyIndexBytes(admin, schema, layout);
  const lsn = async () => (await admin.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn;
  const walFrom = await lsn();
  const purgeStarted = performance.now();
  const purged = await ledger.purgeExpired({ batchSize: 5000, maxRowsPerSecond: Number.POSITIVE_INFINITY });
  const purgeSeconds = (performance.now() - purgeStarted) / 1000;
  const walBytes = Number(
    (await admin.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint AS b', [walFrom]))
      .rows[0].b,
  );
  const indexAfter = await keyIndexBytes(admin, schema, layout);
  // Claims right after the purge, on the same keys as before it.
  const existingAfter = await latencies(tool, (i) => loaded(ROWS - 1 - CALLS - i));
  await ledger.close();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
  return {
    layout,
    loadSeconds,
    fresh,
    existing,
    existingAfter,
    expired,
    purged,
    purgeSeconds,
    walBytes,
    indexBefore,
    indexAfter,
  };
}

const server = await startPostgres();
try {
  console.log(
    `# partitions: ${ROWS.toLocaleString('en-US')} rows per layout, ${EXPIRED_HOURS} h of them expired, partitions of ${WIDTH} s, ${CALLS} calls per latency figure`,
  );
  const results = [];
  for (const layout of ['table', 'partitioned']) {
    const r = await measure(server.url, layout);
    results.push(r);
    const mb = (b) => `${(b / 1024 / 1024).toFixed(0)} MB`;
    console.log(
      `${layout.padEnd(11)} load ${r.loadSeconds.toFixed(0)} s | fresh key p50 ${ms(r.fresh.p50)} ms p99 ${ms(r.fresh.p99)} ms | existing key p50 ${ms(r.existing.p50)} ms p99 ${ms(r.existing.p99)} ms (after purge p50 ${ms(r.existingAfter.p50)} p99 ${ms(r.existingAfter.p99)}) | purge ${r.purged.toLocaleString('en-US')} of ${r.expired.toLocaleString('en-US')} expired rows in ${r.purgeSeconds.toFixed(2)} s, WAL ${mb(r.walBytes)} | key index ${mb(r.indexBefore)} -> ${mb(r.indexAfter)}`,
    );
  }
  console.log(
    JSON.stringify({
      bench: 'partitions',
      rows: ROWS,
      expiredHours: EXPIRED_HOURS,
      widthSeconds: WIDTH,
      calls: CALLS,
      results,
    }),
  );
} finally {
  await server.stop();
}
