// Where a first execution's time goes, tool-ledger against the hand-written baseline: server time and buffers per
// statement (pg_stat_statements, when the server loads it), WAL per call (pg_stat_wal), the share of HOT updates
// (pg_stat_user_tables) and client CPU per call (process.cpuUsage); then the middleware's own CPU per call against
// a pool that answers at once, which is what tool-ledger adds in Node beyond the driver. Sides run one after the
// other, in rotating order over several rounds; figures are medians over the rounds.
//
// Run: npm run build && node bench/profile.mjs
// Env: DATABASE_URL (else an embedded Postgres, which has no pg_stat_statements), BENCH_PROFILE_CALLS (per side
// and round, default 3000), BENCH_PROFILE_ROUNDS (default 3).
import pg from 'pg';
import { createLedger } from '../dist/index.js';
import { BENCH_INPUT, benchResult, handWritten, toolLedger } from './baselines.mjs';
import { median, runConcurrent } from './paired.mjs';
import { withPostgres } from './postgres.mjs';
import { instantPool } from './support/instant-pool.mjs';

const CONCURRENCY = 16;
const CALLS = Number(process.env.BENCH_PROFILE_CALLS ?? 3000);
const ROUNDS = Number(process.env.BENCH_PROFILE_ROUNDS ?? 3);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function statements(admin, schema, calls) {
  const { rows } = await admin.query(
    `SELECT query, calls, mean_exec_time AS ms, (shared_blks_hit + shared_blks_read)::float8 / calls AS blocks,
       wal_bytes::float8 / calls AS wal
     FROM pg_stat_statements WHERE query LIKE $1 AND calls >= $2 ORDER BY query`,
    [`%"${schema}"%`, calls / 2],
  );
  return rows.map((r) => ({
    statement: r.query
      .replace(/"[^"]+"\./g, '')
      .replace(/\s+/g, ' ')
      .slice(0, 40),
    ms: Number(r.ms),
    blocks: r.blocks,
    wal: r.wal,
  }));
}

async function middlewareCpu() {
  const ledger = await createLedger({ pool: instantPool(), migrate: false, telemetry: false });
  let n = 0;
  const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: () => benchResult(n++) });
  const call = (tag) => (i) => tool.call(BENCH_INPUT, { key: `${tag}_${i}`, tenant: 'bench' });
  await runConcurrent(5000, CONCURRENCY, call('warm'));
  const perRound = [];
  for (let r = 0; r < ROUNDS; r++) {
    const before = process.cpuUsage();
    await runConcurrent(CALLS * 3, CONCURRENCY, call(`r${r}`));
    const used = process.cpuUsage(before);
    perRound.push((used.user + used.system) / (CALLS * 3));
  }
  await ledger.close();
  return median(perRound);
}

await withPostgres(async (url) => {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  const tag = Date.now().toString(36);
  const schemas = { hand: `bench_prof_hand_${tag}`, ledger: `bench_prof_ledger_${tag}` };
  try {
    const stats = await admin
      .query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
      .then(() => admin.query('SELECT pg_stat_statements_reset()'))
      .then(
        () => true,
        () => false,
      );
    const sides = {
      hand: await handWritten(url, schemas.hand, { concurrency: CONCURRENCY }),
      ledger: await toolLedger(url, schemas.ledger),
    };
    const figures = { hand: [], ledger: [] };
    const names = Object.keys(sides);
    for (const name of names) await runConcurrent(500, CONCURRENCY, (i) => sides[name].first(0, i));
    for (let r = 1; r <= ROUNDS; r++) {
      for (let s = 0; s < names.length; s++) {
        const name = names[(r + s) % names.length];
        await admin.query(`SELECT pg_stat_reset_shared('wal')`);
        if (stats) await admin.query('SELECT pg_stat_statements_reset()');
        const before = process.cpuUsage();
        const ms = await runConcurrent(CALLS, CONCURRENCY, (i) => sides[name].first(r, i));
        const used = process.cpuUsage(before);
        const { rows } = await admin.query('SELECT wal_bytes::float8 AS bytes FROM pg_stat_wal');
        figures[name].push({
          rate: (CALLS * 1000) / ms,
          cpu: (used.user + used.system) / CALLS,
          wal: rows[0].bytes / CALLS,
          statements: stats ? await statements(admin, schemas[name], CALLS) : [],
        });
      }
    }
    for (const side of Object.values(sides)) await side.close();
    // Statistics of tables reach the shared view about a second after the backends go idle.
    await sleep(1500);
    const { rows: hot } = await admin.query(
      `SELECT schemaname, n_tup_upd::float8 AS upd, n_tup_hot_upd::float8 AS hot FROM pg_stat_user_tables
       WHERE schemaname = ANY($1) AND relname IN ('runs', 'tool_runs')`,
      [Object.values(schemas)],
    );
    const hotShare = (schema) => {
      const row = hot.find((r) => r.schemaname === schema);
      return row && row.upd > 0 ? `${((100 * row.hot) / row.upd).toFixed(1)}%` : 'n/a';
    };
    const med = (name, pick) => median(figures[name].map(pick));
    console.log(
      `Where a first execution's time goes: ${ROUNDS} rounds x ${CALLS} first executions per side, concurrency ${CONCURRENCY}, telemetry off; medians over rounds`,
    );
    console.table(
      Object.fromEntries(
        names.map((name) => [
          name === 'ledger' ? 'tool-ledger' : 'hand-written',
          {
            'calls/s': Math.round(med(name, (f) => f.rate)),
            'client CPU µs/call': Math.round(med(name, (f) => f.cpu)),
            'WAL bytes/call': Math.round(med(name, (f) => f.wal)),
            'HOT updates': hotShare(schemas[name]),
          },
        ]),
      ),
    );
    if (stats) {
      const rows = {};
      for (const name of names) {
        for (const [i, st] of figures[name][0].statements.entries()) {
          const all = figures[name].map((f) => f.statements[i]).filter(Boolean);
          rows[`${name === 'ledger' ? 'tool-ledger' : 'hand-written'}: ${st.statement}`] = {
            'exec ms': median(all.map((x) => x.ms)).toFixed(3),
            'buffers/call': median(all.map((x) => x.blocks)).toFixed(1),
            'WAL bytes/call': Math.round(median(all.map((x) => x.wal))),
          };
        }
      }
      console.table(rows);
    } else {
      console.log(
        'pg_stat_statements is not loaded on this server (shared_preload_libraries): per-statement figures skipped',
      );
    }
    console.log(
      `tool-ledger's middleware alone (a pool that answers at once): ${(await middlewareCpu()).toFixed(0)} µs of CPU per first execution`,
    );
  } finally {
    for (const s of Object.values(schemas)) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await admin.end();
  }
});
