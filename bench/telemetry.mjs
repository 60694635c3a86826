// Cost of telemetry: the same tool calls with a real OpenTelemetry SDK registered (batch span and log
// processors, a periodic metric reader, OTLP/HTTP exporters to a sink in another process, scrubbing on) against
// no SDK at all. Prints throughput and ratios from one run; ratios are the result, absolute numbers drift.
//
// One ledger serves both sides: the SDK is registered and unregistered globally between chunks of calls, and the
// chunks alternate, so both sides meet the same database, pool and machine load. Each SDK chunk ends with a
// flush inside its timed window, so export work is charged to the side that caused it. Besides the ratio of the
// totals, the median of the per-pair ratios is printed: one burst of load from a neighbour moves it less.
//
// A last part explains the result: the telemetry cost of one call measured without a database (a read tool, which
// never touches the ledger), and the ratio that cost alone allows on top of the measured replay time.
//
// Run: npm run build && node bench/telemetry.mjs
// Env: DATABASE_URL (else an embedded Postgres), BENCH_CALLS (per side and phase), BENCH_CAPTURE=1 (content
// capture on), BENCH_BACKENDS=postgres,pglite.
import pg from 'pg';
import { createLedger } from '../dist/index.js';
import { fmt, withPostgres } from './postgres.mjs';
import { createSdk, startSink } from './sdk.mjs';

const CONCURRENCY = 16;
const CALLS = Number(process.env.BENCH_CALLS ?? 4000);
const CHUNK = 500;
const CAPTURE = process.env.BENCH_CAPTURE === '1';
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'postgres,pglite').split(',');
const input = { customerId: 'cus_42', amountCents: 4500, currency: 'usd', lines: [{ sku: 'A-1', qty: 2 }] };

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function runChunk(tool, keys) {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < keys.length; i = next++)
        await tool.call(input, { key: keys[i], tenant: 'bench' });
    }),
  );
}

/** Calls per second of each side, for first executions and then replays of the same keys. */
async function measure(ledger, sdk) {
  let n = 0;
  const tool = ledger.tool({
    name: 'create_invoice',
    kind: 'mutation',
    handler: () => ({ invoiceId: `inv_${n++}`, status: 'open', amountCents: 4500 }),
  });
  const chunks = Math.max(1, Math.round(CALLS / CHUNK));
  const keysOf = (side, c) =>
    Array.from({ length: CHUNK }, (_, i) => `inv_${side}_${c}_${String(i).padStart(4, '0')}`);
  // Warm-up on both sides: JIT, pool connections, SDK instrument creation.
  for (const side of ['none', 'sdk']) {
    if (side === 'sdk') sdk.register();
    await runChunk(tool, keysOf(`warm_${side}`, 0));
    await runChunk(tool, keysOf(`warm_${side}`, 0));
    if (side === 'sdk') {
      await sdk.flush();
      sdk.unregister();
    }
  }
  // The SDK side's warm-up: one chunk of first executions and one of replays.
  const result = { sdkCalls: 2 * CHUNK };
  for (const phase of ['first', 'replay']) {
    const ms = { none: 0, sdk: 0 };
    const cpuUs = { none: 0, sdk: 0 };
    const pairRatios = [];
    for (let c = 0; c < chunks; c++) {
      const pairMs = {};
      for (const side of c % 2 === 0 ? ['none', 'sdk'] : ['sdk', 'none']) {
        if (side === 'sdk') sdk.register();
        const started = performance.now();
        const cpu = process.cpuUsage();
        await runChunk(tool, keysOf(side, c));
        if (side === 'sdk') await sdk.flush();
        pairMs[side] = performance.now() - started;
        ms[side] += pairMs[side];
        const used = process.cpuUsage(cpu);
        cpuUs[side] += used.user + used.system;
        if (side === 'sdk') sdk.unregister();
      }
      pairRatios.push(pairMs.none / pairMs.sdk);
    }
    const calls = chunks * CHUNK;
    result.sdkCalls += calls;
    result[phase] = {
      none: calls / (ms.none / 1000),
      sdk: calls / (ms.sdk / 1000),
      medianRatio: median(pairRatios),
      cpuNone: cpuUs.none / calls,
      cpuSdk: cpuUs.sdk / calls,
    };
  }
  return result;
}

/**
 * Wall time per call of a read tool (no key, no database) with and without the SDK, in alternating chunks: the
 * difference is what telemetry costs one call, span, log record, metrics and export included.
 */
async function telemetryCostPerCall(ledger, sdk) {
  const tool = ledger.tool({ name: 'lookup_invoice', kind: 'read', handler: () => ({ status: 'open' }) });
  const chunk = 2000;
  const run = async () => {
    for (let i = 0; i < chunk; i += CONCURRENCY) {
      await Promise.all(Array.from({ length: CONCURRENCY }, () => tool.call(input, { tenant: 'bench' })));
    }
  };
  const us = { none: [], sdk: [] };
  for (let c = 0; c < 12; c++) {
    for (const side of c % 2 === 0 ? ['none', 'sdk'] : ['sdk', 'none']) {
      if (side === 'sdk') sdk.register();
      const started = performance.now();
      await run();
      if (side === 'sdk') await sdk.flush();
      // The first two pairs warm up the read path.
      if (c >= 2) us[side].push(((performance.now() - started) * 1000) / chunk);
      if (side === 'sdk') sdk.unregister();
    }
  }
  return { none: median(us.none), sdk: median(us.sdk), calls: 12 * chunk };
}

function report(label, result) {
  console.log(
    `${label}: real SDK (batch processors, OTLP/HTTP, scrubbing${CAPTURE ? ', content capture' : ''}) vs no SDK; ${Math.max(1, Math.round(CALLS / CHUNK)) * CHUNK} calls per side and phase, concurrency ${CONCURRENCY}`,
  );
  // Wall-clock throughput is what the target is about; this process's CPU per call is steadier on a busy machine.
  const row = ({ sdk, none, medianRatio, cpuSdk, cpuNone }) => ({
    'with SDK': fmt(sdk),
    'no SDK': fmt(none),
    ratio: (sdk / none).toFixed(2),
    'median of pairs': medianRatio.toFixed(2),
    target: '>= 0.90',
    'CPU µs/call (SDK / none)': `${Math.round(cpuSdk)} / ${Math.round(cpuNone)}`,
    'CPU ratio': (cpuNone / cpuSdk).toFixed(2),
  });
  console.table({ 'first execution (calls/s)': row(result.first), 'replay (calls/s)': row(result.replay) });
}

function reportCost(cost, result) {
  const added = cost.sdk - cost.none;
  const replayUs = 1e6 / result.replay.none;
  const firstUs = 1e6 / result.first.none;
  console.log(
    `  telemetry per call, without a database (read tool, median of 10 chunk pairs): ${cost.none.toFixed(1)} µs without SDK, ${cost.sdk.toFixed(1)} µs with it: the SDK adds ${added.toFixed(1)} µs`,
  );
  console.log(
    `  a call's time without SDK at this concurrency: first ${firstUs.toFixed(0)} µs, replay ${replayUs.toFixed(0)} µs; if the SDK's time is added to it, the ratio can be at most first ${(firstUs / (firstUs + added)).toFixed(2)}, replay ${(replayUs / (replayUs + added)).toFixed(2)}`,
  );
}

function reportExports(exported, sdkCalls) {
  console.log(
    `  exported while registered: ${exported.spans} spans and ${exported.logs} log records for ${sdkCalls} SDK-side calls (the SDK dropped ${sdkCalls - exported.spans} spans, ${sdkCalls - exported.logs} log records)`,
  );
}

/** Everything the bench prints for one backend. */
async function benchBackend(label, ledger) {
  const before = { ...sdk.exported };
  const result = await measure(ledger, sdk);
  report(label, result);
  reportExports(
    { spans: sdk.exported.spans - before.spans, logs: sdk.exported.logs - before.logs },
    result.sdkCalls,
  );
  reportCost(await telemetryCostPerCall(ledger, sdk), result);
}

const sink = await startSink();
const sdk = createSdk(sink.url);
const telemetry = { captureContent: CAPTURE, keyHashSecret: 'bench-key-hash-secret' };
try {
  if (BACKENDS.includes('postgres')) {
    await withPostgres(async (url) => {
      const schema = `bench_tel_${Date.now().toString(36)}`;
      const ledger = await createLedger({ connectionString: url, schema, poolSize: CONCURRENCY, telemetry });
      try {
        await benchBackend('Postgres', ledger);
      } finally {
        await ledger.close();
        const admin = new pg.Pool({ connectionString: url });
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.end();
      }
    });
  }
  if (BACKENDS.includes('pglite')) {
    // In-process PGlite shares the CPU with telemetry, so this is the pessimistic case.
    const ledger = await createLedger({ pglite: 'memory://', telemetry });
    try {
      await benchBackend('Embedded PGlite (in-process)', ledger);
    } finally {
      await ledger.close();
    }
  }
} finally {
  await sdk.shutdown();
  sink.stop();
}
