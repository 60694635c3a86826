// The ledger distributed with Citus against the same ledger on one Postgres: first executions and replays, the same
// workload on both, interleaved in paired chunks at concurrency 16, ratios from one run.
//
// Both servers are this bench's own: a Citus cluster (a coordinator and two workers, scripts/citus/cluster.mjs,
// Citus's default 32 shards) and one Postgres, all from Debian's PostgreSQL 15 with the same settings. Calls spread
// over BENCH_CITUS_TENANTS tenants (default 64), so both workers get work. The replay cache is off on both sides:
// a replay then reads the database (as a replay from another process does), which is what differs between them.
//
// What the ratio means here: the coordinator, both workers and this process share one machine's two cores, so no
// worker adds capacity. The ratio is the price of Citus's extra hop per statement (the coordinator plans the
// statement, routes it to the tenant's shard and relays the answer), not a measure of scaling; on separate
// machines, throughput grows with the workers while each call keeps paying about that hop.
//
// Run: npm run build && node bench/citus.mjs. Needs ../shared/vendor (Citus is built from it, cached): without it,
// one line says so and the bench is skipped. Env: BENCH_CITUS_CALLS (per side and phase, default 8000),
// BENCH_CHUNK (default 1000), BENCH_CITUS_TENANTS (default 64).
import { createLedger } from '../dist/index.js';
import { citusInstall, startCitusCluster } from '../scripts/citus/cluster.mjs';
import { firstAndReplay, fmtRatio, pairRatio } from './paired.mjs';
import { fmt } from './postgres.mjs';
import { debianBin, startCluster } from './support/postgres-cluster.mjs';

const CONCURRENCY = 16;
const CALLS = Number(process.env.BENCH_CITUS_CALLS ?? 8000);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 1000);
const TENANTS = Number(process.env.BENCH_CITUS_TENANTS ?? 64);
const INPUT = { customer: 'cus_1', amountCents: 4500 };
/** The servers' settings, the same on every node of both sides (cluster.mjs sets these on its nodes too). */
const SETTINGS = { fsync: 'off', full_page_writes: 'off', max_connections: '300', shared_buffers: '64MB' };

/** A side: one ledger, and what a first execution and its replay call. */
async function side(url, schema, distribute) {
  const ledger = await createLedger({
    connectionString: url,
    schema,
    distribute,
    telemetry: false,
    replayCacheEntries: 0,
    poolSize: CONCURRENCY,
  });
  const tool = ledger.tool({
    name: 'charge',
    kind: 'mutation',
    handler: (input) => ({ charged: input.amountCents }),
  });
  const key = (chunk, i) => ({ tenant: `tenant-${i % TENANTS}`, key: `c${chunk}-${i}` });
  return {
    first: (chunk, i) => tool.call(INPUT, key(chunk, i)),
    replay: (chunk, i) => tool.call(INPUT, key(chunk, i)),
    close: () => ledger.close(),
  };
}

const install = citusInstall();
if (install.skipped) {
  console.log(`bench/citus.mjs skipped: ${install.skipped}`);
  process.exit(0);
}
const bin = debianBin();
if (!bin) throw new Error('bench/citus.mjs needs Debian PostgreSQL 15: apt-get install postgresql-15');
const cluster = await startCitusCluster({ install, settings: SETTINGS });
const single = await startCluster({ bin, prefix: 'tool-ledger-bench-pg-', settings: SETTINGS });
try {
  const tag = Date.now().toString(36);
  const sides = {
    postgres: await side(single.url, `bench_pg_${tag}`, false),
    citus: await side(cluster.url, `bench_citus_${tag}`, true),
  };
  const { chunks, result } = await firstAndReplay(sides, {
    calls: CALLS,
    chunkSize: CHUNK,
    concurrency: CONCURRENCY,
  });
  console.log(
    `tool-ledger distributed with Citus (coordinator + 2 workers, 32 shards) vs one Postgres, same machine: ${chunks} x ${CHUNK} calls per side and phase over ${TENANTS} tenants, concurrency ${CONCURRENCY}, replay cache off, sides interleaved; ratio = Citus over Postgres, median of per-round ratios (interquartile range)`,
  );
  const row = (phase) => ({
    'one Postgres (calls/s)': fmt(result[phase].rate.postgres),
    'Citus (calls/s)': fmt(result[phase].rate.citus),
    'Citus / Postgres': fmtRatio(pairRatio(result[phase].rounds, 'citus', 'postgres')),
  });
  console.table({ 'first execution': row('first'), 'replay (from the database)': row('replay') });
  console.log(
    "On one 2-core machine the coordinator, both workers and the bench share the cores: the ratio is the cost of Citus's extra hop per statement (coordinator plans, routes to the tenant's shard, relays), not scaling. Spread over machines, workers add capacity and each call still pays about that hop.",
  );
} finally {
  await single.destroy('fast');
  await cluster.destroy();
}
