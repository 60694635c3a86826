// Start-up of the embedded default: a ledger created with no database configured (in-memory PGlite), each in a
// fresh process, so nothing is warm but what a user's second start would find (the saved initdb, see
// src/ledger/drivers/pglite-template.ts). Against pg when DATABASE_URL is set.
// Run: npm run build && node bench/embedded.mjs   Env: BENCH_STARTS (default 3)
import { execFileSync } from 'node:child_process';
import pg from 'pg';

const STARTS = Number(process.env.BENCH_STARTS ?? 3);
const probe = `
const t0 = performance.now();
const { createLedger } = await import(${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)});
const ledger = await createLedger({ telemetry: false, schema: 'bench_start_' + process.pid });
const ms = performance.now() - t0;
const tool = ledger.tool({ name: 'x', kind: 'mutation', handler: () => 1 });
await tool.call({}, { key: 'k' });
console.log(JSON.stringify({ ms, rss: process.memoryUsage().rss }));
await ledger.close();
`;

function start(env) {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', probe], { env, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1));
}

const { DATABASE_URL, ...withoutUrl } = process.env;
const runs = { pglite: [], pg: [] };
for (let i = 0; i < STARTS; i++) {
  runs.pglite.push(start(withoutUrl));
  if (DATABASE_URL) runs.pg.push(start(process.env));
}
const show = (xs) =>
  xs.map((r) => `${(r.ms / 1000).toFixed(2)} s / ${(r.rss / 2 ** 20).toFixed(0)} MiB`).join(', ');
console.log(
  `embedded start (createLedger() without DATABASE_URL, fresh process each, then one call): ${show(runs.pglite)} (target < 1.5 s and < 200 MiB)`,
);
if (DATABASE_URL) {
  console.log(`  on pg (DATABASE_URL) for comparison: ${show(runs.pg)}`);
  const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
  const { rows } = await admin.query(`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'bench_start_%'`);
  for (const { nspname } of rows) await admin.query(`DROP SCHEMA "${nspname}" CASCADE`);
  await admin.end();
}
