// Sustained first executions as a deployment runs them (issue 41): each side alone, in its own process, for the
// whole run: BENCH_SUSTAINED_CALLS (20,000) first executions in a row at concurrency 16, on a fresh table, on a
// Postgres of the bench's own with pg_stat_statements. tool-ledger first, then the hand-written baseline of
// bench/baselines.mjs; no alternation, no second round. Per side: calls/s, WAL bytes and records per call
// (pg_stat_wal over the side's run), the table's updates and how many were HOT (pg_stat_user_tables), and the
// side's statements (pg_stat_statements: µs and WAL bytes per call), autovacuum runs during the side's run (of
// its own table, of others), the client's CPU per call, and where the client's garbage collection went (scavenges,
// full collections, bytes promoted per call, pauses, the CPU of its threads other than the main one:
// bench/support/gc-account.mjs). After each side, its table is vacuumed and analyzed
// outside the figures, so its maintenance does not land in the next side's run. Then the same two with the real
// SDK (bench/sdk.mjs: batch processors, OTLP/HTTP export to a sink in a process of its own): tool-ledger with its
// telemetry on, against the hand-written code with a hand-written span, log record and counter per call; the
// SDK's flush and what it exported are outside the figure (the exported counts show whether anything was dropped).
// A third SDK side, the hand-written code emitting tool-ledger's own telemetry content, prices that content apart
// from tool-ledger's implementation of it. What the backends wait on
// (pg_stat_activity, sampled: lock waits, WAL flushes, the client) is printed per side. The ratio is printed last.
//
// BENCH_FILLFACTOR=N adds a third run: tool-ledger again on a fresh table whose fillfactor is N (ALTER TABLE after
// migration), to weigh that lever in the same run. BENCH_CPU_PROF=1 then profiles one more process per side
// (node --cpu-prof, BENCH_PROF_CALLS calls, default 5,000; not the timed runs) and prints its top self-time functions.
//
// Run: npm run build && node bench/sustained.mjs
// Env: BENCH_SUSTAINED_CALLS (default 20000), BENCH_FILLFACTOR, BENCH_CPU_PROF, BENCH_PROF_CALLS,
// BENCH_SUSTAINED_SDK=0 (leaves the SDK sides out), BENCH_FLEET_WARMUP_CALLS (each worker's warm-up before its
// measured calls, default 5,000: outside the rate and CPU figures, inside the server's WAL counts, whose per-call
// figures divide by both).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { handWritten, toolLedger } from './baselines.mjs';
import { byCategory, byPrintOrder, selfTimes, topFunctions } from './cpu-profile-categories.mjs';
import { fmt } from './postgres.mjs';
import { startSink } from './sdk.mjs';
import { startCluster } from './support/postgres-cluster.mjs';

const CALLS = Number(process.env.BENCH_SUSTAINED_CALLS ?? 20_000);
const CONCURRENCY = 16;
const FILLFACTOR = process.env.BENCH_FILLFACTOR ? Number(process.env.BENCH_FILLFACTOR) : undefined;
const PROFILE = process.env.BENCH_CPU_PROF === '1';
const PROF_CALLS = Number(process.env.BENCH_PROF_CALLS ?? 5000);
const WITH_SDK = process.env.BENCH_SUSTAINED_SDK !== '0';
const WORKER = join(import.meta.dirname, 'fleet-worker.mjs');
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** One worker process of one side: warm-up, then `calls` first executions; answers calls/s and CPU µs per call. */
function runWorker({ side, url, schema, calls, tag, execArgv = [], env = process.env }) {
  const child = spawn(
    process.execPath,
    [...execArgv, WORKER, side, url, schema, String(calls), String(CONCURRENCY), tag, 'true'],
    { stdio: ['pipe', 'pipe', 'inherit'], env },
  );
  let out = '';
  child.stdout.on('data', (chunk) => {
    out += chunk;
    if (out.includes('READY') && !child.started) {
      child.started = true;
      child.stdin.write('GO\n');
    }
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code === 0 && line) {
        const { calls: n, warmupCalls, ms, cpuUs, gc, exported } = JSON.parse(line);
        resolve({ rate: (n / ms) * 1000, cpuPerCall: cpuUs / n, warmupCalls, gc, exported });
      } else reject(new Error(`${side} worker exited with ${code}`));
    });
  });
}

async function counters(admin, schema, table) {
  // Backends report table counts when they end; the worker's pool has closed, so give them a moment.
  await new Promise((r) => setTimeout(r, 1500));
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const [wal] = (
    await admin.query('SELECT wal_records, wal_fpi, wal_bytes::float8 AS wal_bytes FROM pg_stat_wal')
  ).rows;
  const [tab] = (
    await admin.query(
      `SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd, pg_relation_size(relid)::float8 AS heap_bytes,
         autovacuum_count + autoanalyze_count AS own_auto
       FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`,
      [schema, table],
    )
  ).rows;
  const [others] = (
    await admin.query(
      `SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0)::int AS other_auto
       FROM pg_stat_user_tables WHERE schemaname LIKE 'sus\\_%' AND schemaname <> $1`,
      [schema],
    )
  ).rows;
  return { ...wal, ...(tab ?? {}), ...others };
}

/**
 * Samples what the server's client backends wait on, every 25 ms until `done` settles: the share of backend samples
 * per state and wait event (an 'idle' backend waits for the client; 'active' without an event is on the CPU or
 * runnable). Lock waits show as Lock:* or LWLock:*.
 */
async function sampleWaits(admin, done) {
  const counts = new Map();
  let total = 0;
  let samples = 0;
  let finished = false;
  done.then(
    () => {
      finished = true;
    },
    () => {
      finished = true;
    },
  );
  // Bounded by the run: it stops when the worker exits.
  while (!finished) {
    const { rows } = await admin.query(
      `SELECT state || ' ' || coalesce(wait_event_type || ':' || wait_event, '(no wait event)') AS w, count(*)::int AS n
       FROM pg_stat_activity
       WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname = current_database()
       GROUP BY 1`,
    );
    samples++;
    for (const { w, n } of rows) {
      counts.set(w, (counts.get(w) ?? 0) + n);
      total += n;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const shares = [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([w, n]) => `${w} ${((100 * n) / Math.max(total, 1)).toFixed(0)}%`)
    .join(', ');
  return `${(total / Math.max(samples, 1)).toFixed(1)} backends on average: ${shares}`;
}

async function prepareSide(url, admin, side, schema) {
  if (side.startsWith('hand')) {
    const hand = await handWritten(url, schema, { concurrency: 1 });
    await hand.close();
    return 'runs';
  }
  const ledger = await toolLedger(url, schema);
  await ledger.close();
  if (side === 'ledger-ff')
    await admin.query(`ALTER TABLE "${schema}".tool_runs SET (fillfactor = ${FILLFACTOR})`);
  return 'tool_runs';
}

async function measure(server, admin, side, tag, sinkUrl) {
  const schema = `sus_${side.replace('-', '_')}_${tag}`;
  const table = await prepareSide(server.url, admin, side, schema);
  await admin.query('CHECKPOINT');
  await admin.query('SELECT pg_stat_statements_reset()');
  const before = await counters(admin, schema, table);
  const run = runWorker({
    side: side === 'ledger-ff' ? 'ledger' : side,
    url: server.url,
    schema,
    calls: CALLS,
    tag: `${side}${tag}`,
    env: { ...process.env, BENCH_OTLP_URL: sinkUrl },
  });
  const waits = await sampleWaits(admin, run);
  const { rate, cpuPerCall, warmupCalls, gc, exported } = await run;
  // The server's WAL counters span the worker's warm-up too (first executions of the same kind), so its per-call
  // figures divide by both; rate and client CPU are the measured calls' alone.
  const written = CALLS + warmupCalls;
  const after = await counters(admin, schema, table);
  // What autovacuum would do to this table later is done now, outside every figure: otherwise it lands in the
  // next side's run, as it does in bench/fleet.mjs's A B A B mode.
  await admin.query(`VACUUM (ANALYZE) "${schema}".${table}`);
  const d = Object.fromEntries(Object.keys(after).map((k) => [k, Number(after[k]) - Number(before[k] ?? 0)]));
  const statements = (
    await admin.query(
      `SELECT calls, round((total_exec_time / greatest(calls, 1))::numeric * 1000, 1) AS us_per_call,
         round((wal_bytes / greatest(calls, 1))::numeric, 0) AS wal_b_per_call,
         round((shared_blks_hit + shared_blks_read)::numeric / greatest(calls, 1), 1) AS blocks_per_call,
         left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS query
       FROM pg_stat_statements WHERE query LIKE $1 AND calls >= $2 ORDER BY total_exec_time DESC LIMIT 4`,
      [`%${schema}%`, CALLS / 2],
    )
  ).rows;
  return {
    side,
    rate,
    statements,
    waits,
    gc: {
      scavenges: gc.scavenges,
      'full collections': gc.fullCollections,
      'promoted B/call': gc.promotedBytesPerCall.toFixed(0),
      'GC pauses µs/call': gc.gcPauseUsPerCall.toFixed(1),
      'main thread CPU µs/call': gc.mainThreadUsPerCall?.toFixed(0) ?? '',
      'other threads CPU µs/call': gc.otherThreadsUsPerCall?.toFixed(0) ?? '',
    },
    row: {
      'calls/s': fmt(rate),
      'client CPU µs/call': cpuPerCall.toFixed(0),
      'WAL B/call': (d.wal_bytes / written).toFixed(0),
      'WAL rec/call': (d.wal_records / written).toFixed(2),
      'FPI/call': (d.wal_fpi / written).toFixed(3),
      updates: d.n_tup_upd,
      'HOT updates': d.n_tup_hot_upd,
      'heap MiB': (after.heap_bytes / 2 ** 20).toFixed(1),
      'autovacuum+analyze own/others': `${d.own_auto}/${d.other_auto}`,
      'load after': load(),
      ...(exported ? { 'spans/logs exported': `${exported.spans}/${exported.logs}` } : {}),
    },
  };
}

/** One more process per side under node --cpu-prof; the top self-time functions of the whole process. */
async function profileSide(server, admin, side, tag) {
  const schema = `prof_${side}_${tag}`;
  await prepareSide(server.url, admin, side, schema);
  const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-cpuprof-'));
  try {
    const { warmupCalls } = await runWorker({
      side,
      url: server.url,
      schema,
      calls: PROF_CALLS,
      tag: `p${tag}`,
      execArgv: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
    });
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    const nodes = selfTimes(JSON.parse(readFileSync(join(dir, file), 'utf8')));
    const calls = PROF_CALLS + warmupCalls;
    console.log(
      `\n${side}: whole process under --cpu-prof, ${calls} calls, µs per call by category (wall samples):`,
    );
    const categories = byCategory(nodes, calls);
    console.table(
      Object.fromEntries(
        Object.keys(categories)
          .sort(byPrintOrder)
          .map((k) => [k, categories[k].toFixed(1)]),
      ),
    );
    console.log(`${side}: top self-time functions (µs per call; idle excluded):`);
    console.table(topFunctions(nodes, calls, (f) => f.functionName !== '(idle)', 15));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const server = await startCluster({
  prefix: 'tool-ledger-sustained-',
  initdbSync: true,
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' },
  startTimeoutMs: 20_000,
  killAfterMs: 60_000,
});
const sink = WITH_SDK ? await startSink() : undefined;
const admin = new pg.Pool({ connectionString: server.url, max: 1 });
// The server's fast shutdown at the end terminates the pool's idle client: that must not crash the bench.
admin.on('error', () => {});
try {
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const tag = Date.now().toString(36);
  console.log(
    `sustained, each side alone in its own process on a fresh table: ${CALLS} first executions at concurrency ${CONCURRENCY} (load average before: ${load()})`,
  );
  const sides = [
    'ledger',
    'hand',
    ...(FILLFACTOR ? ['ledger-ff'] : []),
    ...(WITH_SDK ? ['ledger-sdk', 'hand-otel', 'hand-content'] : []),
  ];
  const results = [];
  for (const side of sides) results.push(await measure(server, admin, side, tag, sink?.url));
  const LABELS = {
    ledger: 'tool-ledger',
    hand: 'hand-written',
    'ledger-ff': `tool-ledger, fillfactor ${FILLFACTOR}`,
    'ledger-sdk': 'tool-ledger, real SDK',
    'hand-otel': 'hand-written + span/log/counter, real SDK',
    'hand-content': "hand-written + tool-ledger's telemetry content, real SDK",
  };
  console.table(Object.fromEntries(results.map((r) => [LABELS[r.side], r.row])));
  console.log(
    "the client's garbage collection over the measured calls (v8.GCProfiler; promoted: what scavenges moved to the old generation, which only full collections free; other threads: V8's concurrent marking, sweeping and compiles, libuv's pool):",
  );
  console.table(Object.fromEntries(results.map((r) => [LABELS[r.side], r.gc])));
  for (const r of results) {
    console.log(`${r.side}: server backends' samples (pg_stat_activity every 25 ms): ${r.waits}`);
    console.log(`statements of ${r.side} (pg_stat_statements):`);
    console.table(r.statements);
  }
  const bySide = Object.fromEntries(results.map((r) => [r.side, r]));
  const { ledger, hand } = bySide;
  const walOf = (r) => Number(r.row['WAL B/call']);
  console.log(
    `sustained ratio tool-ledger / hand-written: ${(ledger.rate / hand.rate).toFixed(2)}; WAL bytes per call ${(walOf(ledger) / walOf(hand)).toFixed(2)}x`,
  );
  if (FILLFACTOR) {
    const ff = bySide['ledger-ff'];
    console.log(
      `fillfactor ${FILLFACTOR}: ${(ff.rate / hand.rate).toFixed(2)} of hand-written, ${(ff.rate / ledger.rate).toFixed(2)} of the default table; WAL ${(walOf(ff) / walOf(hand)).toFixed(2)}x hand-written`,
    );
  }
  if (WITH_SDK) {
    const sdkRatio = bySide['ledger-sdk'].rate / bySide['hand-otel'].rate;
    console.log(
      `sustained ratio with the real SDK, tool-ledger / hand-instrumented: ${sdkRatio.toFixed(2)}; WAL bytes per call ${(walOf(bySide['ledger-sdk']) / walOf(bySide['hand-otel'])).toFixed(2)}x`,
    );
    console.log(
      `with the real SDK, tool-ledger / hand-written emitting the same telemetry content: ${(bySide['ledger-sdk'].rate / bySide['hand-content'].rate).toFixed(2)}`,
    );
  }
  if (PROFILE) for (const side of ['ledger', 'hand']) await profileSide(server, admin, side, tag);
} finally {
  await admin.end();
  await server.destroy('fast');
  sink?.stop();
}
