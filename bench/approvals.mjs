// Tools without `approval` pay nothing for approvals (issue 38). First executions and replays of a plain mutation,
// interleaved in paired chunks at concurrency 16, on three ledgers:
//   plain     this build, only the plain tool;
//   approval  this build, the plain tool beside a tool with `approval: 'required'` that has calls awaiting a
//             decision in the same table;
//   before    the commit before approvals arrived (built from git history, bench/support/build-at.mjs), the same
//             plain tool.
// Then the same plain/approval pair with telemetry on, its metrics read every 100 ms (the approval gauges' count
// runs at each read on the approval side). Ratios are the result: absolute numbers drift on a shared machine.
//
// Run: npm run build && node bench/approvals.mjs
// Env: DATABASE_URL (else an embedded Postgres), BENCH_CALLS (per side and phase, default 10000), BENCH_CHUNK
// (default 500), BENCH_AWAITING (calls left awaiting approval on the approval side, default 200).
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import pg from 'pg';
import * as current from '../dist/index.js';
import { BENCH_INPUT, benchKey, benchResult } from './baselines.mjs';
import { firstAndReplay, fmtRatio, pairRatio } from './paired.mjs';
import { fmt, withPostgres } from './postgres.mjs';
import { buildAt, commitBefore } from './support/build-at.mjs';

const CONCURRENCY = 16;
const CALLS = Number(process.env.BENCH_CALLS ?? 10_000);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 500);
const AWAITING = Number(process.env.BENCH_AWAITING ?? 200);

/** A ledger of `lib` with the plain tool, and with `approval` a tool that asks beside it, `AWAITING` calls parked. */
async function side(lib, url, schema, { approval = false, telemetry = false } = {}) {
  const ledger = await lib.createLedger({ connectionString: url, schema, telemetry: telemetry ? {} : false });
  let n = 0;
  const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: () => benchResult(n++) });
  if (approval) {
    const refund = ledger.tool({
      name: 'refund',
      kind: 'mutation',
      approval: 'required',
      handler: (input) => ({ refunded: input }),
    });
    for (let i = 0; i < AWAITING; i++) {
      await refund.call({ cents: i + 1 }, { key: `park_${i}`, tenant: 'bench' }).catch((error) => {
        if (error?.code !== 'APPROVAL_REQUIRED') throw error;
      });
    }
  }
  const tag = `ap_${schema}`;
  return {
    first: (c, i) => tool.call(BENCH_INPUT, { key: benchKey(tag, c, i), tenant: 'bench' }),
    replay: (c, i) => tool.call(BENCH_INPUT, { key: benchKey(tag, c, i), tenant: 'bench' }),
    close: () => ledger.close(),
  };
}

/** A metric reader collected on a timer, as a periodic exporter would, without exporting anywhere. */
class TimedReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  async onForceFlush() {}
  async onShutdown() {}
}

function report(title, chunks, result, pairs) {
  console.log(
    `${title}: ${chunks} x ${CHUNK} calls per side and phase, concurrency ${CONCURRENCY}, sides interleaved; ratio = median of per-round ratios (interquartile range), above 1 = the first side faster`,
  );
  const rows = {};
  for (const phase of ['first', 'replay']) {
    const { rate, rounds } = result[phase];
    const row = Object.fromEntries(Object.entries(rate).map(([name, r]) => [`${name} calls/s`, fmt(r)]));
    for (const [a, b] of pairs) row[`${a} / ${b}`] = fmtRatio(pairRatio(rounds, a, b));
    rows[phase === 'first' ? 'first execution' : 'replay'] = row;
  }
  console.table(rows);
}

await withPostgres(async (url) => {
  const admin = new pg.Pool({ connectionString: url });
  const tag = Date.now().toString(36);
  const schemas = [];
  const schema = (name) => {
    schemas.push(`bench_ap_${name}_${tag}`);
    return schemas.at(-1);
  };
  try {
    const commit = commitBefore('approval_deadline', 'src/ledger/migrations.ts');
    const before = commit ? await import(buildAt(commit)) : undefined;
    if (!before)
      console.log(
        'the commit before approvals is not in this clone\'s history (shallow?): the "before" side is left out',
      );
    const sides = {
      plain: await side(current, url, schema('plain')),
      approval: await side(current, url, schema('approval'), { approval: true }),
      ...(before ? { before: await side(before, url, schema('before')) } : {}),
    };
    const run = await firstAndReplay(sides, { calls: CALLS, chunkSize: CHUNK, concurrency: CONCURRENCY });
    report(
      `telemetry off; approval side: ${AWAITING} calls awaiting approval in its table${commit ? `; before = ${commit.slice(0, 12)}` : ''}`,
      run.chunks,
      run.result,
      [
        ['plain', 'approval'],
        ...(before
          ? [
              ['plain', 'before'],
              ['approval', 'before'],
            ]
          : []),
      ],
    );

    // Telemetry on, with a reader collecting every 100 ms: the approval side's gauges count its awaiting rows at
    // each collection, 600 times a minute where an exporter's default is once.
    const reader = new TimedReader();
    const provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    const timer = setInterval(() => void reader.collect().catch(() => {}), 100);
    const withTelemetry = {
      plain: await side(current, url, schema('plain_otel'), { telemetry: true }),
      approval: await side(current, url, schema('approval_otel'), { approval: true, telemetry: true }),
    };
    const otel = await firstAndReplay(withTelemetry, {
      calls: CALLS,
      chunkSize: CHUNK,
      concurrency: CONCURRENCY,
    });
    clearInterval(timer);
    await provider.shutdown();
    report('telemetry on (metrics collected every 100 ms)', otel.chunks, otel.result, [
      ['plain', 'approval'],
    ]);
  } finally {
    for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await admin.end();
  }
});
