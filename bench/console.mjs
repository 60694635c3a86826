// The console's reads at scale: search (by key; by tenant in an hour's window; by status across a day) and the run
// page, over HTTP from a running console, p50 and p99 per kind, on a tool_runs of BENCH_CONSOLE_ROWS rows.
//
// Run: npm run build && node bench/console.mjs
// Env: DATABASE_URL (else an embedded Postgres), BENCH_CONSOLE_ROWS (default 1000000; the issue also asks 10000000,
// which takes several minutes to fill on 2 cores), BENCH_CONSOLE_REQUESTS (per kind, default 300).
import pg from 'pg';
import { startConsole } from '../dist/console/index.js';
import { createLedger } from '../dist/index.js';
import { fmt, withPostgres } from './postgres.mjs';

const ROWS = Number(process.env.BENCH_CONSOLE_ROWS ?? 1_000_000);
const REQUESTS = Number(process.env.BENCH_CONSOLE_REQUESTS ?? 300);
const TENANTS = 200;
const DAYS = 7;

/** Runs as the ledger keeps them, spread over DAYS days, TENANTS tenants and 12 tools, in chunks of a million. */
async function fill(admin, schema) {
  const started = performance.now();
  for (let from = 1; from <= ROWS; from += 1_000_000) {
    const to = Math.min(ROWS, from + 999_999);
    await admin.query(
      `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, user_id, parameter_hash, status, final,
         attempt, result_json, steps, created_at, started_at, updated_at, completed_at, expires_at, conflict_count)
       SELECT 'tenant-' || (g % ${TENANTS}), 'tool_' || (g % 12), 'run_' || g || ':step_4', 'u_' || (g % 5000),
         md5(g::text), CASE WHEN g % 101 = 0 THEN 'failed' ELSE 'succeeded' END, g % 101 = 0, 1,
         '{"invoiceId":"inv","status":"open"}',
         '{"create":{"status":"succeeded","attempt":1,"result":"{\\"id\\":1}"}}'::jsonb,
         t, t, t, t, t + interval '30 days', (g % 503 = 0)::int
       FROM generate_series($1::int, $2::int) g,
         LATERAL (SELECT now() - ((${ROWS} - g)::float8 / ${ROWS}) * interval '${DAYS} days' AS t) AS at`,
      [from, to],
    );
  }
  await admin.query(`VACUUM ANALYZE "${schema}".tool_runs`);
  return (performance.now() - started) / 1000;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Latencies (ms) of `REQUESTS` sequential requests, sorted. */
async function measure(request) {
  const times = [];
  for (let i = 0; i < REQUESTS; i++) {
    const started = performance.now();
    const response = await request(i);
    const body = await response.text();
    times.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${body.slice(0, 300)}`);
  }
  return times.sort((a, b) => a - b);
}

await withPostgres(async (url) => {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  const schema = `bench_console_${process.pid}`;
  try {
    const ledger = await createLedger({ connectionString: url, schema, telemetry: false });
    await ledger.close();
    const filled = await fill(admin, schema);
    const { rows: size } = await admin.query(
      `SELECT pg_total_relation_size('"${schema}".tool_runs') AS bytes`,
    );
    const { rows: indexes } = await admin.query(
      `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'tool_runs' ORDER BY 1`,
      [schema],
    );
    const app = await startConsole({ connectionString: url, schema, port: 0 });
    const page = await (await fetch(new URL('/search', app.url))).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)[1];
    const minute = (d) => d.toISOString().slice(0, 16);
    const now = Date.now();
    const search = (form) =>
      fetch(new URL('/search', app.url), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: app.url.origin },
        body: new URLSearchParams({ csrf, ...form }),
      });
    const pick = (i) => 1 + ((i * 7919) % ROWS);
    const kinds = {
      'search by key': (i) => search({ key: `run_${pick(i)}:step_4` }),
      'search by tenant, last hour': (i) =>
        search({
          tenant: `tenant-${i % TENANTS}`,
          from: minute(new Date(now - 3600_000)),
          to: minute(new Date(now + 60_000)),
        }),
      'search failed, last day': () =>
        search({
          status: 'failed',
          from: minute(new Date(now - 86_400_000)),
          to: minute(new Date(now + 60_000)),
        }),
      'run page': (i) => fetch(new URL(`/runs/${pick(i)}`, app.url)),
    };
    console.log(
      `console reads on ${ROWS.toLocaleString('en-US')} rows (${(Number(size[0].bytes) / 2 ** 20).toFixed(0)} MiB with indexes; filled in ${fmt(filled)} s; indexes: ${indexes.map((r) => r.indexname).join(', ')}), ${REQUESTS} sequential requests each over HTTP:`,
    );
    for (const [name, request] of Object.entries(kinds)) {
      await measure(request); // warm: plans, caches
      const times = await measure(request);
      console.log(
        `  ${name.padEnd(28)} p50 ${fmt(percentile(times, 50))} ms   p99 ${fmt(percentile(times, 99))} ms`,
      );
    }
    await app.close();
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
});
