// Client CPU that telemetry adds to each call, with the production-like SDK of bench/sdk.mjs registered: tool-ledger
// with telemetry on against telemetry off; the hand-written span, log record and counter against the same code
// bare; and tool-ledger's own telemetry content written by hand (bench/sdk.mjs) against the same code bare, whole
// and less one piece at a time, which prices each piece. The ledger runs over a pool that answers at once, so the
// figures are the JavaScript work alone, which on a CPU-bound machine is what throughput pays for. Each side's
// chunk includes flushing its spans and log records through the batch processors to an OTLP/HTTP sink in another
// process, so export CPU counts where it arises. Sides run in rotating order over rounds; figures are medians over
// rounds of process.cpuUsage per call.
//
// Run: npm run build && node bench/telemetry-cpu.mjs
// Env: BENCH_TELCPU_CALLS (per side and round, default 3000), BENCH_TELCPU_ROUNDS (default 7),
// BENCH_TELCPU_ONLY (one side name, to profile it alone with node --cpu-prof).
import { createHash } from 'node:crypto';
import { createLedger } from '../dist/index.js';
import { BENCH_INPUT, benchKey, benchResult } from './baselines.mjs';
import { median, runConcurrent } from './paired.mjs';
import { createSdk, handContentInstrumentation, handInstrumentation, startSink } from './sdk.mjs';
import { instantPool } from './support/instant-pool.mjs';

const CONCURRENCY = 16;
const CALLS = Number(process.env.BENCH_TELCPU_CALLS ?? 3000);
const ROUNDS = Number(process.env.BENCH_TELCPU_ROUNDS ?? 7);
const ONLY = process.env.BENCH_TELCPU_ONLY;
const BATCH = 1000;
/** The pieces of tool-ledger's content that bench/sdk.mjs can leave out, each priced by a side without it. */
const CONTENT_PIECES = ['hmacs', 'histograms', 'logAttributes', 'logRecord'];

// Keys shaped like bench/telemetry-baseline.mjs's (`tl_<schema>_<chunk>_<i>`), so the key check takes the same path.
const TAG = `tl_bench_cpu_${Date.now().toString(36)}`;

/** tool-ledger over the instant pool; a replay meets its first execution in the replay cache. */
async function ledgerSide(telemetry) {
  const ledger = await createLedger({ pool: instantPool(), migrate: false, telemetry });
  let n = 0;
  const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: () => benchResult(n++) });
  const call = (r, i) => tool.call(BENCH_INPUT, { key: benchKey(TAG, r, i), tenant: 'bench' });
  return { first: call, replay: call, close: () => ledger.close() };
}

/** The hand-written call of bench/baselines.mjs with its two statements answered at once. */
function handSide(instrument) {
  let n = 0;
  // `observe` is what a richer instrumentation records (see bench/baselines.mjs): timed like the real statements.
  const timed = async (observe, operation) => {
    const started = performance.now();
    await null;
    observe.operation(operation, (performance.now() - started) / 1000);
  };
  const statement = (observe, operation) => (observe ? timed(observe, operation) : null);
  const call = async (observe) => {
    const hash = createHash('sha256').update(JSON.stringify(BENCH_INPUT)).digest('hex');
    observe?.paramsHash(hash);
    await statement(observe, 'claim');
    const started = observe ? performance.now() : 0;
    const value = benchResult(n++);
    observe?.executed((performance.now() - started) / 1000);
    await statement(observe, 'complete');
    return value;
  };
  const wrapped = instrument ? (key) => instrument(call, key) : () => call();
  const run = (r, i) => wrapped(benchKey(TAG, r, i));
  return { first: run, replay: run, close: async () => {} };
}

const sink = await startSink();
const sdk = createSdk(sink.url);
sdk.register();
try {
  const all = {
    ledger: await ledgerSide({ keyHashSecret: 'bench-key-hash-secret' }),
    ledgerOff: await ledgerSide(false),
    handOtel: handSide(handInstrumentation()),
    handContent: handSide(handContentInstrumentation('bench-key-hash-secret')),
    hand: handSide(undefined),
    ...Object.fromEntries(
      CONTENT_PIECES.map((omit) => [
        `without_${omit}`,
        handSide(handContentInstrumentation('bench-key-hash-secret', { omit })),
      ]),
    ),
  };
  const sides = ONLY ? { [ONLY]: all[ONLY] } : all;
  const names = Object.keys(sides);
  const phases = ['first', 'replay'];
  const cpu = Object.fromEntries(phases.map((p) => [p, Object.fromEntries(names.map((n) => [n, []]))]));
  const measure = async (name, phase, r) => {
    const before = process.cpuUsage();
    // Flushed every BATCH calls: the processors' queues hold 2048 items, and a queue that overflows drops (and never
    // exports) the rest, which would hide their export cost.
    for (let start = 0; start < CALLS; start += BATCH) {
      await runConcurrent(Math.min(BATCH, CALLS - start), CONCURRENCY, (i) =>
        sides[name][phase](r, start + i),
      );
      await sdk.flush();
    }
    const used = process.cpuUsage(before);
    return (used.user + used.system) / CALLS;
  };
  // Round 0 warms the JIT and the caches; it is not counted.
  for (let r = 0; r <= ROUNDS; r++) {
    for (const phase of phases) {
      for (let s = 0; s < names.length; s++) {
        const name = names[(r + s) % names.length];
        const us = await measure(name, phase, r);
        if (r > 0) cpu[phase][name].push(us);
      }
    }
  }
  for (const side of Object.values(all)) await side.close();
  await sdk.flush();
  console.log(
    `Client CPU per call with a real SDK registered (batch processors, OTLP/HTTP export): ${ROUNDS} rounds x ${CALLS} calls per side and phase, concurrency ${CONCURRENCY}, over a pool that answers at once; medians over rounds (µs per call)`,
  );
  const paired = (phase, a, b) => median(cpu[phase][a].map((x, i) => x - cpu[phase][b][i]));
  const us = (x) => (x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(1));
  const row = (phase) => {
    if (ONLY) return { [ONLY]: us(median(cpu[phase][ONLY])) };
    const ledger = paired(phase, 'ledger', 'ledgerOff');
    const hand = paired(phase, 'handOtel', 'hand');
    const sameContent = paired(phase, 'handContent', 'hand');
    return {
      'tool-ledger, telemetry on': us(median(cpu[phase].ledger)),
      'tool-ledger, telemetry off': us(median(cpu[phase].ledgerOff)),
      'tool-ledger telemetry': us(ledger),
      'hand-written span/log/counter': us(hand),
      'tool-ledger / hand-written telemetry': (ledger / hand).toFixed(2),
      "tool-ledger's content by hand": us(sameContent),
      'tool-ledger / its content by hand': (ledger / sameContent).toFixed(2),
    };
  };
  console.table({ 'first execution': row('first'), replay: row('replay') });
  if (!ONLY) {
    // A piece's price: the content by hand with it, less the content by hand without it, paired by round.
    const pieces = (phase) =>
      Object.fromEntries(
        CONTENT_PIECES.map((omit) => [omit, us(paired(phase, 'handContent', `without_${omit}`))]),
      );
    console.log(
      "What each piece of tool-ledger's content costs, written by hand (µs per call): the two HMACs (key and parameter hash), the three histogram points, the log record's attributes beyond tool, tenant, key and outcome, and the whole log record",
    );
    console.table({ 'first execution': pieces('first') });
  }
  const withTelemetry = names.filter((n) => n !== 'ledgerOff' && n !== 'hand');
  const perSide = (ROUNDS + 1) * phases.length * CALLS;
  const withLogs = withTelemetry.filter((n) => n !== 'without_logRecord');
  console.log(
    `exported: ${sdk.exported.spans} spans (of ${perSide * withTelemetry.length} calls with telemetry), ${sdk.exported.logs} log records (of ${perSide * withLogs.length} calls that emit one)`,
  );
} finally {
  await sdk.shutdown();
  sink.stop();
}
