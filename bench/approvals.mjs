// Tools without `approval` pay nothing for approvals (issue 38). First executions and replays of a plain mutation,
// interleaved in paired chunks at concurrency 16, on three ledgers:
//   plain     this build, only the plain tool;
//   approval  this build, the plain tool beside a tool with `approval: 'required'` that has calls awaiting a
//             decision in the same table;
//   before    the commit before approvals arrived (built from git history, bench/support/build-at.mjs), the same
//             plain tool.
// Then the same plain/approval pair with telemetry on, its metrics read every 100 ms (the approval gauges' count
// runs at each read; it is process-wide work, so it lands on both sides' rounds alike and the pair shows the calls,
// not the gauges). Last, what one read of the gauges costs the database, at the bench's table size and at
// BENCH_GAUGE_ROWS rows. Ratios are the result: absolute numbers drift on a shared machine.
//
// Run: npm run build && node bench/approvals.mjs
// Env: DATABASE_URL (else an embedded Postgres), BENCH_CALLS (per side and phase, default 10000), BENCH_CHUNK
// (default 500), BENCH_AWAITING (calls left awaiting approval on the approval side, default 200), BENCH_GAUGE_ROWS
// (table size for the gauge read's cost, default 1000000).
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import pg from 'pg';
import * as current from '../dist/index.js';
import { countAwaitingSql } from '../dist/ledger/approvals/sql.js';
import { BENCH_INPUT, benchKey, benchResult } from './baselines.mjs';
import { firstAndReplay, fmtRatio, pairRatio } from './paired.mjs';
import { fmt, withPostgres } from './postgres.mjs';
import { buildAt, commitBefore } from './support/build-at.mjs';

const CONCURRENCY = 16;
const CALLS = Number(process.env.BENCH_CALLS ?? 10_000);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 500);
const AWAITING = Number(process.env.BENCH_AWAITING ?? 200);
const GAUGE_ROWS = Number(process.env.BENCH_GAUGE_ROWS ?? 1_000_000);

/**
 * What one read of the approval gauges costs the database: the count statement (a full read of `tool_runs`, which
 * has no index on status, so that completions stay HOT updates), median of 21 runs, on the table as the bench left
 * it and again after growing it to `GAUGE_ROWS` finished rows.
 */
async function gaugeReadCost(admin, schema) {
  const timeRead = async () => {
    const ms = [];
    for (let i = 0; i < 21; i++) {
      const started = performance.now();
      await admin.query(countAwaitingSql(schema), [['bench']]);
      ms.push(performance.now() - started);
    }
    return ms.sort((a, b) => a - b)[10];
  };
  const rows = async () =>
    Number((await admin.query(`SELECT count(*) AS n FROM "${schema}".tool_runs`)).rows[0].n);
  const result = [{ rows: await rows(), ms: await timeRead() }];
  const missing = GAUGE_ROWS - result[0].rows;
  if (missing > 0) {
    await admin.query(
      `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, final,
         result_json, completed_at, expires_at)
       SELECT 'bench', 'create_invoice', 'grow_' || g, 'h', 'succeeded', true, '{"ok":true}', now(), now() + interval '1 day'
       FROM generate_series(1, $1::integer) g`,
      [missing],
    );
    await admin.query(`VACUUM ANALYZE "${schema}".tool_runs`);
    result.push({ rows: await rows(), ms: await timeRead() });
  }
  return result;
}

/** Completions that were HOT updates, of `calls` first executions of the plain tool on `schema`. */
async function hotShare(admin, url, schema, tag, calls = 2000) {
  const stats = async () =>
    (
      await admin.query(
        'SELECT n_tup_upd::float8 AS upd, n_tup_hot_upd::float8 AS hot FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2',
        [schema, 'tool_runs'],
      )
    ).rows[0];
  const before = await stats();
  const s = await side(current, url, schema);
  for (let i = 0; i < calls; i += CONCURRENCY) {
    await Promise.all(Array.from({ length: CONCURRENCY }, (_, j) => s.first(tag, i + j)));
  }
  // Closing the pool ends its backends, which flush their table statistics.
  await s.close();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const after = await stats();
  return (after.hot - before.hot) / (after.upd - before.upd);
}

/**
 * The partial index a DBA may add so the gauges' count reads only approval rows (docs/performance.md): rows of
 * tools without `approval` never set `approval_deadline`, so they get no entry, and their completions do not
 * touch an indexed column, so they stay HOT. Measured: HOT share of completions before and after, the index's
 * size, whether the count uses it, and the count's time with it.
 */
async function withApprovalIndex(admin, url, schema) {
  const hotBefore = await hotShare(admin, url, schema, 'hot_without');
  await admin.query(
    `CREATE INDEX tool_runs_awaiting_idx ON "${schema}".tool_runs (approval_deadline) WHERE approval_deadline IS NOT NULL`,
  );
  await admin.query(`ANALYZE "${schema}".tool_runs`);
  const hotAfter = await hotShare(admin, url, schema, 'hot_with');
  const plan = (await admin.query(`EXPLAIN ${countAwaitingSql(schema)}`, [['bench']])).rows
    .map((r) => r['QUERY PLAN'])
    .join('\n');
  const size = Number(
    (await admin.query(`SELECT pg_relation_size('"${schema}".tool_runs_awaiting_idx') AS b`)).rows[0].b,
  );
  const ms = [];
  for (let i = 0; i < 21; i++) {
    const started = performance.now();
    await admin.query(countAwaitingSql(schema), [['bench']]);
    ms.push(performance.now() - started);
  }
  return {
    hotBefore,
    hotAfter,
    usesIndex: plan.includes('tool_runs_awaiting_idx'),
    size,
    ms: ms.sort((a, b) => a - b)[10],
  };
}

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
    // Client CPU per call: above 1, the second side's calls cost this process more CPU than the first side's.
    for (const [a, b] of pairs) row[`CPU ${b} / ${a}`] = fmtRatio(pairRatio(result[phase].cpuRounds, a, b));
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

    const reads = await gaugeReadCost(admin, schemas[1]);
    console.log(
      `one read of the approval gauges (their count statement, ${AWAITING} calls awaiting, median of 21): ${reads
        .map((r) => `${r.ms.toFixed(1)} ms at ${r.rows.toLocaleString('en-US')} rows`)
        .join(', ')}`,
    );
    const indexed = await withApprovalIndex(admin, url, schemas[1]);
    console.log(
      `with the partial index on approval_deadline: the count ${indexed.usesIndex ? 'uses' : 'does NOT use'} it, ${indexed.ms.toFixed(1)} ms a read; index ${(indexed.size / 1024).toFixed(0)} KiB; HOT share of plain completions ${(indexed.hotBefore * 100).toFixed(1)}% without it, ${(indexed.hotAfter * 100).toFixed(1)}% with it`,
    );
  } finally {
    for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await admin.end();
  }
});
