// Where the client's time per first execution goes, by category of code, tool-ledger against the hand-written
// baseline: a CPU profile (node:inspector, in this process) of each side while it runs first executions at
// concurrency 16 against a real Postgres, one side at a time after a warm-up. Sides 1 and 2 run without an SDK, as
// bench/ledger.mjs does; sides 3 and 4 with the production-like SDK of bench/sdk.mjs registered, as
// bench/telemetry-baseline.mjs sets them up, flushing spans and log records every 1,000 calls inside the profiled
// window so export counts where it arises. The profile samples wall time: a sample inside `writev` or the event
// loop's wait is not necessarily CPU, so process.cpuUsage of the same window is printed next to it.
//
// Run: npm run build && node bench/cpu-profile.mjs
// Env: DATABASE_URL (else an embedded Postgres), BENCH_PROFILE_CALLS (per side, default 4000),
// BENCH_PROFILE_INTERVAL_US (sampling interval, default 100).
import pg from 'pg';
import { handWritten, toolLedger } from './baselines.mjs';
import {
  byCategory,
  byPrintOrder,
  categoryOf,
  profiled,
  selfTimes,
  topFunctions,
} from './cpu-profile-categories.mjs';
import { runConcurrent } from './paired.mjs';
import { withPostgres } from './postgres.mjs';
import { createSdk, handInstrumentation, startSink } from './sdk.mjs';

const CONCURRENCY = 16;
const CALLS = Number(process.env.BENCH_PROFILE_CALLS ?? 4000);
const INTERVAL_US = Number(process.env.BENCH_PROFILE_INTERVAL_US ?? 100);
const WARM = 1000;
const BATCH = 1000;

/** Warms a side up, then profiles CALLS first executions of it. */
async function profileSide(side, flush) {
  await runConcurrent(WARM, CONCURRENCY, (i) => side.first(0, i));
  await flush();
  const { result, profile } = await profiled(INTERVAL_US, async () => {
    const before = process.cpuUsage();
    const started = performance.now();
    for (let start = 0; start < CALLS; start += BATCH) {
      await runConcurrent(Math.min(BATCH, CALLS - start), CONCURRENCY, (i) => side.first(1, start + i));
      await flush();
    }
    const used = process.cpuUsage(before);
    return {
      wallUs: ((performance.now() - started) * 1000) / CALLS,
      cpuUs: (used.user + used.system) / CALLS,
    };
  });
  const nodes = selfTimes(profile);
  return { ...result, nodes, categories: byCategory(nodes, CALLS) };
}

const runs = {};
let exported;
await withPostgres(async (url) => {
  const admin = new pg.Pool({ connectionString: url, max: 1 });
  const tag = Date.now().toString(36);
  const schemas = ['hand', 'tl', 'hand_otel', 'tl_otel'].map((s) => `bench_cpuprof_${s}_${tag}`);
  const profileAndClose = async (name, side, flush) => {
    try {
      runs[name] = await profileSide(side, flush);
    } finally {
      await side.close();
    }
  };
  try {
    const none = async () => {};
    await profileAndClose('hand', await handWritten(url, schemas[0], { concurrency: CONCURRENCY }), none);
    await profileAndClose('ledger', await toolLedger(url, schemas[1]), none);
    const sink = await startSink();
    const sdk = createSdk(sink.url);
    sdk.register();
    try {
      const instrument = handInstrumentation();
      const handOtel = await handWritten(url, schemas[2], { concurrency: CONCURRENCY, instrument });
      await profileAndClose('handOtel', handOtel, sdk.flush);
      const ledgerOtel = await toolLedger(url, schemas[3], {
        telemetry: { keyHashSecret: 'bench-key-hash-secret' },
      });
      await profileAndClose('ledgerOtel', ledgerOtel, sdk.flush);
      exported = sdk.exported;
    } finally {
      await sdk.shutdown();
      sink.stop();
    }
  } finally {
    for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await admin.end();
  }
});

const columns = {
  'hand-written': 'hand',
  'tool-ledger': 'ledger',
  'Δ tool-ledger − hand': ['ledger', 'hand'],
  'hand + span/log/counter': 'handOtel',
  'tool-ledger + SDK': 'ledgerOtel',
  'Δ with SDK': ['ledgerOtel', 'handOtel'],
};
const cell = (pick, get) => {
  const value = Array.isArray(pick) ? get(runs[pick[0]]) - get(runs[pick[1]]) : get(runs[pick]);
  return (Array.isArray(pick) && value > 0 ? '+' : '') + value.toFixed(1);
};
const row = (get) => Object.fromEntries(Object.entries(columns).map(([col, pick]) => [col, cell(pick, get)]));

const categories = [...new Set(Object.values(runs).flatMap((r) => Object.keys(r.categories)))].sort(
  byPrintOrder,
);
const table = {};
for (const category of categories) {
  if (Object.values(runs).every((r) => (r.categories[category] ?? 0) < 0.05)) continue;
  table[category] = row((r) => r.categories[category] ?? 0);
}
const sampled = (r) => Object.values(r.categories).reduce((a, b) => a + b, 0);
table['= all samples'] = row(sampled);
table['= all samples but (idle)'] = row((r) => sampled(r) - (r.categories['(idle)'] ?? 0));
table['wall time / call (elapsed ÷ calls)'] = row((r) => r.wallUs);
table['process.cpuUsage / call (all threads)'] = row((r) => r.cpuUs);

console.log(
  `CPU profile of the client per first execution: ${CALLS} calls per side after ${WARM} to warm up, concurrency ${CONCURRENCY}, one side at a time, real Postgres; node:inspector sampling every ${INTERVAL_US} µs. Sides 1–2 without an SDK, 3–4 with bench/sdk.mjs's SDK registered (export flushed every ${BATCH} calls inside the window). µs of sampled time per call by category of the sampled function's own (self) time.`,
);
console.log(
  'The profile samples wall time: samples in writev (the kernel running the woken backend on this machine), (program) and (idle) include waiting, not only CPU; compare the cpuUsage row, which counts CPU of all threads (GC helpers and the sampler included). Profiling itself slows every side.',
);
console.table(table);

const ownCode = (frame) => categoryOf(frame).startsWith('tool-ledger: ');
console.log("tool-ledger's own code, telemetry off (side 2): top self time");
console.table(topFunctions(runs.ledger.nodes, CALLS, ownCode));
const telemetryCode = (frame) => categoryOf(frame) === 'tool-ledger: telemetry';
console.log("tool-ledger's telemetry code with the SDK (side 4): top self time");
console.table(topFunctions(runs.ledgerOtel.nodes, CALLS, telemetryCode));
const sdkCode = (frame) => categoryOf(frame).startsWith('node_modules: @opentelemetry/');
console.log('The OpenTelemetry SDK and API under tool-ledger (side 4): top self time');
console.table(topFunctions(runs.ledgerOtel.nodes, CALLS, sdkCode));
console.log(`exported to the OTLP sink: ${exported.spans} spans, ${exported.logs} log records`);
