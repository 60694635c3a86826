// WAL per first execution, record by record (issue 41): pg_waldump --stats=record over one side's calls, for
// tool-ledger and the hand-written baseline of bench/baselines.mjs, on a Postgres of the bench's own. Two tables
// per side: a fresh one, and one in the steady state of a deployment that purges, whose freed pages new rows
// reuse and whose block ranges vacuum has summarized (as many rows as the measured calls write, written, expired,
// purged and vacuumed before them). The byte counts do not depend on the machine's load, so one run says it; the side's calls run
// at concurrency 16 after a warm-up of 300.
//
// What it shows (docs/performance.md, "WAL per first execution, record by record"): the rows' widths (the heap
// insert and the HOT completion) and, on the ledger's side, the BRIN indexes' summary updates, which an insert
// writes whenever its block range is already summarized: the first range of a fresh table (summarized when the
// index was built), and every range a purged table reuses.
//
// Run: npm run build && node bench/wal-records.mjs
// Env: BENCH_WAL_CALLS (default 20,000, as bench/sustained.mjs). Needs pg_waldump (Debian: apt-get install postgresql).
import { execFileSync } from 'node:child_process';
import pg from 'pg';
import { handWritten, toolLedger } from './baselines.mjs';
import { debianBin, POSTGRES_MISSING, startCluster } from './support/postgres-cluster.mjs';

const CALLS = Number(process.env.BENCH_WAL_CALLS ?? 20_000);
const CONCURRENCY = 16;
const WARM_UP = 300;
// As many as the measured calls and their warm-up write: every one of them then lands in space a purge freed, as in a
// table whose size holds steady (rows purged as fast as they come).
const AGED_ROWS = CALLS + WARM_UP;

const bin = debianBin('pg_waldump');
if (!bin) {
  console.log(`wal-records: skipped, no pg_waldump here (${POSTGRES_MISSING})`);
  process.exit(0);
}

/** `calls` calls of `call(c, i)`, `CONCURRENCY` at a time, numbered from `from`. */
async function drive(call, calls, from = 0) {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, c) => {
      for (let i = next++; i < calls; i = next++) await call(c, from + i);
    }),
  );
}

/** The records between two LSNs, summed by type: { type: { count, bytes } } with full-page images in the bytes. */
function records(cluster, start, end) {
  const out = execFileSync(
    `${bin}/pg_waldump`,
    ['--stats=record', '-s', start, '-e', end, '-p', `${cluster.data}/pg_wal`],
    { encoding: 'utf8', ...(cluster.user ?? {}) },
  );
  const types = {};
  for (const line of out.split('\n')) {
    // "Heap/INSERT   970 ( 11.76)   248320 ( 30.54)   0 (  0.00)   248320 ( 30.54)"
    const m = /^(\S+\/\S+)\s+(\d+)\s+\([^)]*\)\s+\d+\s+\([^)]*\)\s+\d+\s+\([^)]*\)\s+(\d+)/.exec(line);
    if (m) types[m[1]] = { count: Number(m[2]), bytes: Number(m[3]) };
  }
  return types;
}

async function measure(cluster, admin, run) {
  const lsn = async () => (await admin.query('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
  const start = await lsn();
  await run();
  return records(cluster, start, await lsn());
}

const cluster = await startCluster({
  bin,
  prefix: 'tool-ledger-wal-records-',
  what: 'the WAL bench',
  // No checkpoint inside a measured run: its full-page images would land on whichever side ran after it.
  settings: { checkpoint_timeout: '1h', max_wal_size: '8GB', autovacuum: 'off' },
});
const admin = new pg.Client({ connectionString: cluster.url });
await admin.connect();
const results = {};
try {
  for (const aged of [false, true]) {
    const phase = aged ? 'purged table' : 'fresh table';
    // tool-ledger: its own schema; the aged table's rows expired after 1 s, purged by the ledger, then vacuumed.
    const schema = aged ? 'tl_aged' : 'tl_fresh';
    if (aged) {
      const old = await toolLedger(cluster.url, schema, { ttlSeconds: 1 });
      await drive(old.first, AGED_ROWS, 1_000_000);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await old.ledger.purgeExpired({ maxRowsPerSecond: Number.POSITIVE_INFINITY });
      await old.close();
      await admin.query(`VACUUM "${schema}".tool_runs`);
    }
    const ledger = await toolLedger(cluster.url, schema);
    await drive(ledger.first, WARM_UP, 2_000_000);
    results[`tool-ledger, ${phase}`] = await measure(cluster, admin, () => drive(ledger.first, CALLS));
    await ledger.close();

    // The hand-written table: the same age (its rows deleted, as a user's cleanup would, and vacuumed).
    const handSchema = aged ? 'hand_aged' : 'hand_fresh';
    const hand = await handWritten(cluster.url, handSchema, { concurrency: CONCURRENCY });
    if (aged) {
      await drive(hand.first, AGED_ROWS, 1_000_000);
      await admin.query(`DELETE FROM "${handSchema}".runs`);
      await admin.query(`VACUUM "${handSchema}".runs`);
    }
    await drive(hand.first, WARM_UP, 2_000_000);
    results[`hand-written, ${phase}`] = await measure(cluster, admin, () => drive(hand.first, CALLS));
    await hand.close();
  }
} finally {
  await admin.end();
  await cluster.destroy('fast');
}

const types = [...new Set(Object.values(results).flatMap((r) => Object.keys(r)))].sort();
const sides = Object.keys(results);
const perCall = (r, type) => (r[type]?.bytes ?? 0) / CALLS;
const total = (r) => Object.values(r).reduce((sum, t) => sum + t.bytes, 0) / CALLS;
console.log(
  `\nWAL per first execution by record type, bytes (${CALLS} calls per side, concurrency ${CONCURRENCY})`,
);
console.log(['record type', ...sides].join(' | '));
for (const type of types) {
  console.log([type, ...sides.map((s) => perCall(results[s], type).toFixed(1))].join(' | '));
}
console.log(['total', ...sides.map((s) => total(results[s]).toFixed(1))].join(' | '));
for (const phase of ['fresh table', 'purged table']) {
  const tl = results[`tool-ledger, ${phase}`];
  const hand = results[`hand-written, ${phase}`];
  const brin = Object.entries(tl)
    .filter(([type]) => type.startsWith('BRIN/'))
    .reduce((sum, [, t]) => sum + t.bytes, 0);
  console.log(
    `${phase}: tool-ledger / hand-written = ${(total(tl) / total(hand)).toFixed(2)}x; ` +
      `without the BRIN records ${((total(tl) - brin / CALLS) / total(hand)).toFixed(2)}x ` +
      `(BRIN ${(brin / CALLS).toFixed(1)} B per call)`,
  );
}
