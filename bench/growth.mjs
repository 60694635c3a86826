// Cost as the ledger grows: claim latency on a small against a large tool_runs (interleaved chunks), and purging
// expired rows while live calls run on the same table (live throughput before and during, purge rate).
//
// Run: npm run build && node bench/growth.mjs
// Env: DATABASE_URL (else an embedded Postgres), BENCH_GROWTH_ROWS (large table, default 1000000; the issue's
// figure is 10000000, which takes minutes to fill), BENCH_PURGE_ROWS (expired rows to purge, default 1000000;
// 0 skips), BENCH_GROWTH_CALLS (calls per side, default 4000).
import pg from 'pg';
import { createLedger } from '../dist/index.js';
import { BENCH_INPUT } from './baselines.mjs';
import { median, runConcurrent } from './paired.mjs';
import { fmt, withPostgres } from './postgres.mjs';

const SMALL = 10_000;
const LARGE = Number(process.env.BENCH_GROWTH_ROWS ?? 1_000_000);
const PURGE_ROWS = Number(process.env.BENCH_PURGE_ROWS ?? 1_000_000);
const CALLS = Number(process.env.BENCH_GROWTH_CALLS ?? 4000);
const PURGE_BATCH = Number(process.env.BENCH_PURGE_BATCH ?? 1000);
const CHUNK = 250;
const CONCURRENCY = 16;

/** Rows as the ledger writes them: completed runs, live (`expiresIn` ahead) or long expired. */
async function fill(admin, schema, rows, { expired = false, tool = 'fill' } = {}) {
  const started = performance.now();
  const step = 1_000_000;
  for (let from = 1; from <= rows; from += step) {
    const to = Math.min(rows, from + step - 1);
    await admin.query(
      `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, attempt,
         result_json, created_at, started_at, completed_at, expires_at)
       SELECT 'bench', $3::text, 'f' || g, md5(g::text), 'succeeded', 1, '{"invoiceId":"inv","status":"open"}',
         now() - interval '2 days', now() - interval '2 days', now() - interval '2 days',
         CASE WHEN $4::boolean THEN now() - interval '1 day' ELSE now() + interval '1 day' END
       FROM generate_series($1::int, $2::int) g`,
      [from, to, tool, expired],
    );
  }
  await admin.query(`VACUUM ANALYZE "${schema}".tool_runs`);
  return (performance.now() - started) / 1000;
}

async function tableSize(admin, schema) {
  const { rows } = await admin.query(
    `SELECT pg_total_relation_size('"${schema}".tool_runs') AS total, pg_relation_size('"${schema}".tool_runs') AS heap,
       (SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'tool_runs') AS dead`,
    [schema],
  );
  return { total: Number(rows[0].total), heap: Number(rows[0].heap), dead: Number(rows[0].dead ?? 0) };
}

const mib = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;

/** Median latency per call (ms) of first executions and replays at concurrency 1, small and large interleaved. */
async function claimLatency(url, schemas) {
  const sides = {};
  for (const [name, schema] of Object.entries(schemas)) {
    // The replay cache off: every call reaches the table.
    const ledger = await createLedger({
      connectionString: url,
      schema,
      telemetry: false,
      replayCacheEntries: 0,
    });
    const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: () => ({ ok: true }) });
    sides[name] = { ledger, tool };
  }
  const lat = {};
  for (const phase of ['first', 'replay']) {
    const per = Object.fromEntries(Object.keys(sides).map((n) => [n, []]));
    const chunks = Math.max(2, Math.round(CALLS / CHUNK));
    for (let c = 0; c <= chunks; c++) {
      for (const name of c % 2 ? Object.keys(sides).reverse() : Object.keys(sides)) {
        const times = [];
        await runConcurrent(CHUNK, 1, async (i) => {
          const started = performance.now();
          await sides[name].tool.call(BENCH_INPUT, { key: `g_${c}_${i}`, tenant: 'bench' });
          times.push(performance.now() - started);
        });
        if (c > 0) per[name].push(median(times));
      }
    }
    lat[phase] = Object.fromEntries(Object.entries(per).map(([n, xs]) => [n, median(xs)]));
  }
  for (const { ledger } of Object.values(sides)) await ledger.close();
  return lat;
}

/** Live calls on the same table, before and while `ledger.purgeExpired()` deletes PURGE_ROWS expired rows. */
async function purgeUnderLoad(url, admin, schema) {
  const filled = await fill(admin, schema, PURGE_ROWS, { expired: true, tool: 'old' });
  const before = await tableSize(admin, schema);
  const live = await createLedger({ connectionString: url, schema, telemetry: false, replayCacheEntries: 0 });
  const purger = await createLedger({ connectionString: url, schema, telemetry: false, migrate: false });
  const tool = live.tool({ name: 'create_invoice', kind: 'mutation', handler: () => ({ ok: true }) });
  let n = 0;
  const liveChunk = () =>
    runConcurrent(CHUNK * 2, CONCURRENCY, () => tool.call(BENCH_INPUT, { key: `p${n++}` }));
  // Quiet throughput: a few chunks before the purge.
  await liveChunk();
  const quiet = [];
  for (let c = 0; c < 4; c++) quiet.push((CHUNK * 2 * 1000) / (await liveChunk()));
  const started = performance.now();
  let purging = true;
  const purged = purger.purgeExpired({ batchSize: PURGE_BATCH }).finally(() => {
    purging = false;
  });
  const loaded = [];
  while (purging) loaded.push((CHUNK * 2 * 1000) / (await liveChunk()));
  const deleted = await purged;
  const seconds = (performance.now() - started) / 1000;
  const after = [];
  for (let c = 0; c < 4; c++) after.push((CHUNK * 2 * 1000) / (await liveChunk()));
  const afterPurge = await tableSize(admin, schema);
  await admin.query(`VACUUM "${schema}".tool_runs`);
  const vacuumed = await tableSize(admin, schema);
  await live.close();
  await purger.close();
  return { filled, deleted, seconds, quiet, loaded, after, before, afterPurge, vacuumed };
}

await withPostgres(async (url) => {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  const tag = Date.now().toString(36);
  const schemas = { small: `bench_small_${tag}`, large: `bench_large_${tag}`, purge: `bench_purge_${tag}` };
  try {
    for (const schema of Object.values(schemas)) {
      await (await createLedger({ connectionString: url, schema, telemetry: false })).close();
    }
    const fillSmall = await fill(admin, schemas.small, SMALL);
    const fillLarge = await fill(admin, schemas.large, LARGE);
    const sizes = {
      small: await tableSize(admin, schemas.small),
      large: await tableSize(admin, schemas.large),
    };
    console.log(
      `growth: tool_runs with ${SMALL.toLocaleString('en-US')} rows (${mib(sizes.small.total)}, filled in ${fillSmall.toFixed(1)} s) against ${LARGE.toLocaleString('en-US')} rows (${mib(sizes.large.total)}, ${fillLarge.toFixed(1)} s); median call latency at concurrency 1, replay cache off, chunks interleaved`,
    );
    const lat = await claimLatency(url, { small: schemas.small, large: schemas.large });
    const row = (phase) => ({
      [`${SMALL.toLocaleString('en-US')} rows (ms)`]: lat[phase].small.toFixed(2),
      [`${LARGE.toLocaleString('en-US')} rows (ms)`]: lat[phase].large.toFixed(2),
      'large / small': (lat[phase].large / lat[phase].small).toFixed(2),
      target: '0.80–1.20',
    });
    console.table({ 'first execution (claim + complete)': row('first'), 'replay (claim)': row('replay') });

    if (PURGE_ROWS > 0) {
      const p = await purgeUnderLoad(url, admin, schemas.purge);
      // Quiet = the chunks before and after: the neighbours' load drifts over the minute this takes.
      const q = median([...p.quiet, ...p.after]);
      const l = median(p.loaded);
      console.log(
        `purge: ${p.deleted.toLocaleString('en-US')} expired rows (filled in ${p.filled.toFixed(1)} s) deleted in ${p.seconds.toFixed(1)} s = ${fmt(p.deleted / p.seconds)} rows/s (target >= 20,000; batches of ${PURGE_BATCH}) while live calls ran on the same table at concurrency ${CONCURRENCY}`,
      );
      console.log(
        `  live throughput: ${fmt(q)} calls/s without the purge (before ${fmt(median(p.quiet))}, after ${fmt(median(p.after))}), ${fmt(l)} calls/s during it (${p.loaded.length} chunks; ratio ${(l / q).toFixed(2)}, target >= 0.80)`,
      );
      console.log(
        `  table: ${mib(p.before.total)} before, ${mib(p.afterPurge.total)} after the purge (${p.afterPurge.dead.toLocaleString('en-US')} dead tuples), ${mib(p.vacuumed.total)} after a plain VACUUM (space reused, not returned)`,
      );
    }
  } finally {
    for (const s of Object.values(schemas)) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await admin.end();
  }
});
