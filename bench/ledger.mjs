// tool-ledger against what a user would write by hand (bench/baselines.mjs), interleaved in paired chunks at
// concurrency 16; then the wake-up latency of a waiting duplicate and RSS growth over many calls.
// Ratios are the result: absolute numbers drift on a shared machine.
//
// Run: npm run build && node --expose-gc bench/ledger.mjs
// Env: DATABASE_URL (else an embedded Postgres), BENCH_CALLS (per side and phase, default 20000), BENCH_CHUNK
// (calls per side per round, default 1000), BENCH_RSS_CALLS (default 100000), BENCH_WAKEUPS (default 200).
import pg from 'pg';
import { BENCH_INPUT, handWritten, sameSql, toolLedger } from './baselines.mjs';
import { firstAndReplay, fmtRatio, pairRatio } from './paired.mjs';
import { fmt, throughput, withPostgres } from './postgres.mjs';
import { wakeupLatency } from './wakeup.mjs';

const CONCURRENCY = 16;
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 1000);
const RSS_CALLS = Number(process.env.BENCH_RSS_CALLS ?? 100_000);
const WAKEUPS = Number(process.env.BENCH_WAKEUPS ?? 200);

async function rssGrowth(url, schema) {
  const side = await toolLedger(url, schema);
  const tool = side.ledger.tool({ name: 'rss_invoice', kind: 'mutation', handler: () => ({ ok: true }) });
  // Warm up so the measurement is growth, not first-use allocation.
  await throughput(2000, CONCURRENCY, (i) => tool.call(BENCH_INPUT, { key: `w${i}` }));
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  const heapBefore = process.memoryUsage().heapUsed;
  // One call in ten is new; the rest replay, as agents' retries do.
  await throughput(RSS_CALLS, CONCURRENCY, (i) =>
    tool.call(BENCH_INPUT, { key: `r${i % (RSS_CALLS / 10)}` }),
  );
  globalThis.gc?.();
  const after = process.memoryUsage().rss;
  const heapAfter = process.memoryUsage().heapUsed;
  // The same again with new keys: the replay cache is full by now, so this is growth per call, not its bound.
  await throughput(RSS_CALLS, CONCURRENCY, (i) =>
    tool.call(BENCH_INPUT, { key: `s${i % (RSS_CALLS / 10)}` }),
  );
  globalThis.gc?.();
  const steady = process.memoryUsage().rss;
  // The live JS heap after a full GC: flat when RSS moves only because V8 and malloc keep freed pages.
  const heapSteady = process.memoryUsage().heapUsed;
  await side.close();
  return { before, after, steady, heap: [heapBefore, heapAfter, heapSteady] };
}

await withPostgres(async (url) => {
  const admin = new pg.Pool({ connectionString: url });
  const tag = Date.now().toString(36);
  const schemas = [];
  const schema = (name) => {
    schemas.push(`bench_${name}_${tag}`);
    return schemas.at(-1);
  };
  try {
    const sides = {
      hand: await handWritten(url, schema('hand'), { concurrency: CONCURRENCY }),
      same: await sameSql(url, schema('same'), { concurrency: CONCURRENCY }),
      ledger: await toolLedger(url, schema('ledger')),
      // A replay from a process that did not see the row: what the cache cannot help with.
      nocache: await toolLedger(url, schema('nocache'), { replayCacheEntries: 0 }),
    };
    const { chunks, result } = await firstAndReplay(sides, {
      calls: CALLS,
      chunkSize: CHUNK,
      concurrency: CONCURRENCY,
    });
    console.log(
      `tool-ledger (default options, telemetry off) vs a hand-written pg baseline: ${chunks} x ${CHUNK} calls per side and phase, concurrency ${CONCURRENCY}, sides interleaved; ratio = median of per-round ratios (interquartile range)`,
    );
    const row = (phase, target) => {
      const { rate, rounds } = result[phase];
      return {
        'tool-ledger': fmt(rate.ledger),
        'hand-written': fmt(rate.hand),
        ratio: fmtRatio(pairRatio(rounds, 'ledger', 'hand')),
        target,
        'same SQL': fmt(rate.same),
        'ratio vs same SQL': fmtRatio(pairRatio(rounds, 'ledger', 'same')),
        'cache off': fmt(rate.nocache),
        'cache off ratio': fmtRatio(pairRatio(rounds, 'nocache', 'hand')),
      };
    };
    console.table({
      'first execution (calls/s)': row('first', '>= 0.90'),
      'replay (calls/s)': row('replay', '>= 1.20'),
    });

    const wake = await wakeupLatency(url, schema('wake'), WAKEUPS);
    console.log(
      `wake-up of a waiting duplicate, from the first call's handler returning to the duplicate's result (${wake.count} trials): p50 ${wake.p50.toFixed(1)} ms, p90 ${wake.p90.toFixed(1)} ms, max ${wake.max.toFixed(1)} ms (target p50 < 20 ms)`,
    );

    const rss = await rssGrowth(url, schema('rss'));
    const mb = (b) => (b / 1024 / 1024).toFixed(1);
    console.log(
      `RSS over ${RSS_CALLS.toLocaleString('en-US')} calls (10% new keys): ${mb(rss.before)} MiB -> ${mb(rss.after)} MiB (growth ${mb(rss.after - rss.before)} MiB, target < 30 MiB per 100,000, including the replay cache filling to its bound), then ${mb(rss.steady)} MiB after ${RSS_CALLS.toLocaleString('en-US')} more (growth ${mb(rss.steady - rss.after)} MiB); live JS heap after GC ${rss.heap.map(mb).join(' -> ')} MiB${globalThis.gc ? '' : ' [run node with --expose-gc for a steadier figure]'}`,
    );
  } finally {
    for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await admin.end();
  }
});
