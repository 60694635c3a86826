// The latency tool-ledger gateway adds to one MCP tool call: the same calls to the npm filesystem server, once
// directly and once through `tool-ledger gateway`, over the same transport (stdio, a real SDK 1.x client). Three
// kinds of call: a read-only tool (relayed, telemetry only), a mutating tool with a new key each time (relayed
// and recorded in the ledger) and the same mutating call again (answered from the ledger, nothing sent upstream).
// Calls are sequential, so each figure is one call's round trip. The added latency is gateway minus direct, per
// percentile.
// Run: npm run build && DATABASE_URL=postgres://… node bench/gateway.mjs   Env: BENCH_CALLS (default 300)
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import pg from 'pg';

const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const WARMUP = Math.min(50, Math.ceil(CALLS / 5));
const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) {
  console.log('bench/gateway.mjs skipped: set DATABASE_URL (the gateway ledger is Postgres).');
  process.exit(0);
}
const root = fileURLToPath(new URL('..', import.meta.url));
const server = join(root, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const cli = join(root, 'dist/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'tl-gw-bench-'));
const schema = `bench_gateway_${process.pid}`;

async function connect(command, args) {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore', env: process.env }));
  return client;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(client, makeCall) {
  for (let i = 0; i < WARMUP; i++) await client.callTool(makeCall(`warm-${i}`));
  const times = [];
  for (let i = 0; i < CALLS; i++) {
    const call = makeCall(String(i));
    const t0 = performance.now();
    const result = await client.callTool(call);
    times.push(performance.now() - t0);
    if (result.isError) throw new Error(`call failed: ${JSON.stringify(result.content)}`);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

const run = Date.now().toString(36);
const KINDS = {
  'read-only (list_allowed_directories)': () => ({ name: 'list_allowed_directories', arguments: {} }),
  'mutating, new key (create_directory)': (i) => ({
    name: 'create_directory',
    arguments: { path: join(dir, 'd'), idempotency_key: `bench-${run}-${i}` },
  }),
  'mutating, replay (same key)': () => ({
    name: 'create_directory',
    arguments: { path: join(dir, 'd'), idempotency_key: `bench-${run}-replayed` },
  }),
};

const direct = await connect(process.execPath, [server, dir]);
const gateway = await connect(process.execPath, [
  cli,
  'gateway',
  '--database-url',
  DATABASE_URL,
  '--schema',
  schema,
  '--',
  process.execPath,
  server,
  dir,
]);
// The direct server ignores idempotency_key (its schema strips unknown arguments), so both sides make the same call.
const rows = [];
try {
  for (const [kind, makeCall] of Object.entries(KINDS)) {
    const d = await measure(direct, makeCall);
    const g = await measure(gateway, makeCall);
    rows.push({ kind, d, g });
  }
} finally {
  await direct.close();
  await gateway.close();
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
}

// On a shared machine a p99 difference can come out negative: both sides' tails are mostly scheduling noise.
const ms = (v) => `${v.toFixed(2)} ms`.padStart(9);
console.log(
  `tool-ledger gateway: latency added per call over stdio, ${CALLS} sequential calls each (after ${WARMUP} warm-up), load ${loadavg()[0].toFixed(2)}`,
);
console.log(
  'call                                    direct p50  p99       gateway p50  p99      added p50  p99',
);
for (const { kind, d, g } of rows) {
  console.log(
    `${kind.padEnd(38)} ${ms(d.p50)} ${ms(d.p99)}   ${ms(g.p50)} ${ms(g.p99)}   ${ms(g.p50 - d.p50)} ${ms(g.p99 - d.p99)}`,
  );
}
