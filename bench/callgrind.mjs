// Instructions per call (callgrind), tool-ledger against the hand-written baseline, telemetry off, one call at a
// time: first executions, and replays with tool-ledger's replay cache off (a replay as another process meets it).
// Unlike times, instruction counts hardly move with the neighbours' load, so a few hundred calls are enough.
//
// Server: a private Postgres 15 cluster whose backends run under callgrind (bench/callgrind-cluster.mjs); the
// figure is the sum over every statement of a call (parse, plan, execute, commit, protocol), in the backends only:
// WAL writer, checkpointer and the postmaster are not counted. Client: node --predictable under callgrind, the
// whole process (JIT compilation and GC included). Each side runs in three processes: W first executions and W replays (the start-up and warm-up
// that the other two subtract), W+N and W, W+N and W+N; the differences give N first executions and N replays.
//
// Run: npm run build && node bench/callgrind.mjs
// Env: BENCH_CALLGRIND_CALLS (N, default 150), BENCH_CALLGRIND_WARMUP (W, default 50), BENCH_CALLGRIND_RUN_SECONDS
// (bound on each measured process, default 900).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { differenceRows, matchingCost, perCallCosts, selfCosts } from './callgrind-annotate.mjs';
import { callgrindTotal, PG_BIN, withCallgrindCluster } from './callgrind-cluster.mjs';

const CALLS = Number(process.env.BENCH_CALLGRIND_CALLS ?? 150);
const WARMUP = Number(process.env.BENCH_CALLGRIND_WARMUP ?? 50);
const RUN_MS = Number(process.env.BENCH_CALLGRIND_RUN_SECONDS ?? 900) * 1000;
const ATTEMPTS = 2;
const TOP_FUNCTIONS = 6;
const SIDES = { hand: 'hand-written', ledger: 'tool-ledger' };
const RUNS = {
  base: { firsts: WARMUP, replays: WARMUP },
  firsts: { firsts: WARMUP + CALLS, replays: WARMUP },
  replays: { firsts: WARMUP + CALLS, replays: WARMUP + CALLS },
};

function valgrindVersion() {
  try {
    return execFileSync('valgrind', ['--version'], { timeout: 10_000 }).toString().trim();
  } catch {
    return undefined;
  }
}

/** One process of callgrind-calls.mjs under callgrind, bounded in time; returns its output file. */
async function clientRun(dir, tag, args, jitless) {
  const out = join(dir, `client-${tag}.out`);
  const log = join(dir, `client-${tag}.log`);
  const child = spawn(
    'nice',
    [
      '-n',
      '19',
      'valgrind',
      '--tool=callgrind',
      '--smc-check=all',
      `--callgrind-out-file=${out}`,
      process.execPath,
      // V8's own seeds and background threads make a process's count vary by millions; --predictable fixes the
      // seeds and does the same work on the main thread (two identical runs then differ by about 0.01%).
      '--predictable',
      // --jitless also turns off WebAssembly, which undici (Node's fetch, loaded on first touch) needs.
      ...(jitless ? ['--jitless', '--no-experimental-fetch'] : []),
      join(import.meta.dirname, 'callgrind-calls.mjs'),
      ...args,
    ],
    { stdio: ['ignore', openSync(log, 'a'), openSync(log, 'a')], detached: true },
  );
  const stopGroup = () => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
  };
  process.once('exit', stopGroup);
  const timer = setTimeout(stopGroup, RUN_MS);
  const code = await new Promise((resolve) => child.once('exit', (c, signal) => resolve(c ?? signal)));
  clearTimeout(timer);
  process.off('exit', stopGroup);
  if (code !== 0 || callgrindTotal(out) === undefined) {
    const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-8).join('\n') : '';
    throw Object.assign(new Error(`node under callgrind (${tag}) ended with ${code}:\n${tail}`), {
      client: true,
    });
  }
  return out;
}

/** Every run of both sides; a run that fails is tried once more (a neighbour may have signalled it). */
async function measure({ url, dir, backendInstructions }, jitless) {
  const runs = { hand: {}, ledger: {} };
  const stamp = Date.now().toString(36);
  for (const [index, [run, { firsts, replays }]] of Object.entries(RUNS).entries()) {
    for (const side of Object.keys(SIDES)) {
      const started = performance.now();
      for (let attempt = 1; ; attempt++) {
        // The tag names the schema, which is in tool-ledger's keys: the same length in every run of a side.
        const tag = `cg_${side}_${index}_${stamp}_${attempt}`;
        const args = [side, `${url}?application_name=${tag}`, tag, String(firsts), String(replays)];
        try {
          const client = await clientRun(dir, tag, args, jitless);
          const server = await backendInstructions(tag);
          runs[side][run] = { client: [client], server: server.files };
          console.log(
            `  ${SIDES[side]}: ${firsts} first executions, ${replays} replays: client ` +
              `${callgrindTotal(client).toLocaleString('en-US')}, server ${server.instructions.toLocaleString('en-US')} ` +
              `instructions (${server.files.length} backend(s), ${((performance.now() - started) / 1000).toFixed(0)} s)`,
          );
          break;
        } catch (error) {
          if (attempt >= ATTEMPTS) throw error;
          console.log(`  ${error.message.split('\n')[0]}; trying again`);
        }
      }
    }
  }
  return runs;
}

/**
 * This early in a process, V8's optimizing compiler (TurboFan) is still compiling the hot functions: its share is
 * real cost at these call counts but fades in a long-lived process, so the client is also shown without it.
 */
function compilerShare(phases, figures) {
  const compiler = /\bv8::internal::compiler::/;
  const rows = {};
  for (const side of Object.keys(SIDES)) {
    rows[SIDES[side]] = {};
    for (const [phase, costs] of Object.entries(phases)) {
      const jit = matchingCost(costs[side], compiler);
      rows[SIDES[side]][`compiler Ir/${phase}`] = jit;
      rows[SIDES[side]][`client without compiler Ir/${phase}`] = figures[side][`client Ir/${phase}`] - jit;
    }
  }
  const columns = Object.keys(rows[SIDES.hand]);
  const ratio = Object.fromEntries(
    columns.map((c) => [c, (rows[SIDES.ledger][c] / rows[SIDES.hand][c]).toFixed(2)]),
  );
  for (const row of Object.values(rows))
    for (const c of columns) row[c] = Math.round(row[c]).toLocaleString('en-US');
  console.log("Client: V8's optimizing compiler (still compiling hot functions this early), and the rest");
  console.table({ ...rows, 'tool-ledger / hand-written': ratio });
}

async function main() {
  const version = valgrindVersion();
  if (!version) {
    console.log('callgrind bench skipped: valgrind is not installed (Debian: apt-get install valgrind)');
    return;
  }
  if (!existsSync(join(PG_BIN, 'postgres'))) {
    console.log(
      `callgrind bench skipped: no Postgres 15 server binaries in ${PG_BIN} (Debian: postgresql-15)`,
    );
    return;
  }
  const started = performance.now();
  console.log(
    `Instructions per call (${version}), telemetry off, one call at a time, replay cache off: ${CALLS} calls per ` +
      `side and phase after ${WARMUP} to warm up, on a private Postgres 15 whose backends run under callgrind`,
  );
  await withCallgrindCluster(async (cluster) => {
    // The first connection to a database builds its relation-cache init file; no measured backend should.
    const warm = new pg.Client({ connectionString: `${cluster.url}?application_name=cg_warm` });
    await warm.connect();
    await warm.query('SELECT 1');
    await warm.end();
    let jitless = false;
    let runs;
    try {
      runs = await measure(cluster, jitless);
    } catch (error) {
      if (!error.client) throw error;
      console.log(`node under callgrind failed twice; measuring again with node --jitless. ${error.message}`);
      jitless = true;
      runs = await measure(cluster, jitless);
    }
    const total = (files) => files.reduce((sum, f) => sum + callgrindTotal(f), 0);
    const perCall = (side, from, to, where) =>
      (total(runs[side][to][where]) - total(runs[side][from][where])) / CALLS;
    const figures = Object.fromEntries(
      Object.keys(SIDES).map((side) => [
        side,
        {
          'server Ir/first': perCall(side, 'base', 'firsts', 'server'),
          'client Ir/first': perCall(side, 'base', 'firsts', 'client'),
          'server Ir/replay': perCall(side, 'firsts', 'replays', 'server'),
          'client Ir/replay': perCall(side, 'firsts', 'replays', 'client'),
        },
      ]),
    );
    const columns = Object.keys(figures.hand);
    console.table({
      ...Object.fromEntries(
        Object.entries(figures).map(([side, f]) => [
          SIDES[side],
          Object.fromEntries(columns.map((c) => [c, Math.round(f[c]).toLocaleString('en-US')])),
        ]),
      ),
      'tool-ledger / hand-written': Object.fromEntries(
        columns.map((c) => [c, (figures.ledger[c] / figures.hand[c]).toFixed(2)]),
      ),
    });
    console.log(
      `Client start-up and warm-up, subtracted: ${Math.round(total(runs.hand.base.client) / 1e6)} M ` +
        `(hand-written), ${Math.round(total(runs.ledger.base.client) / 1e6)} M (tool-ledger) instructions per process` +
        (jitless
          ? '. Client under --jitless: V8 interprets everything, so client figures overstate JIT-compiled code'
          : ''),
    );
    for (const where of ['server', 'client']) {
      const costs = Object.fromEntries(
        Object.keys(SIDES).map((side) => [
          side,
          Object.fromEntries(Object.keys(RUNS).map((run) => [run, selfCosts(runs[side][run][where])])),
        ]),
      );
      const phase = (from, to) =>
        Object.fromEntries(
          Object.keys(SIDES).map((side) => [side, perCallCosts(costs[side][from], costs[side][to], CALLS)]),
        );
      console.log(
        `${where === 'server' ? 'Server (Postgres backends)' : 'Client (node)'}: self instructions per call of the ` +
          `functions that differ most between the sides`,
      );
      const phases = { first: phase('base', 'firsts'), replay: phase('firsts', 'replays') };
      console.table(differenceRows(phases, TOP_FUNCTIONS));
      if (where === 'client') compilerShare(phases, figures);
    }
  });
  console.log(`callgrind bench took ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

await main();
