// Two builds of tool-ledger in one process, for a change whose saving is smaller than the machine's noise between
// runs: each build makes first executions in blocks, alternating (A B, then B A), against one Postgres, and each
// block's client CPU (process.cpuUsage) is read; the difference of the two blocks of each pair cancels what the
// machine did meanwhile. It prints the median and mean of those paired differences, and each build's promises
// per first execution (an async_hooks count over one more block each): the count does not depend on the load.
//
// A build is the `dist/` of a checkout: build the base in a worktree first, for example
//   git worktree add /tmp/base HEAD~1 && ln -s "$PWD/node_modules" /tmp/base/node_modules && (cd /tmp/base && npx tsc -p tsconfig.build.json)
// With no BENCH_AB_BASE, the build is compared with itself: the differences then show the noise alone.
//
// Run: npm run build && BENCH_AB_BASE=/tmp/base/dist node bench/ab-builds.mjs
// Env: DATABASE_URL (else an embedded Postgres), BENCH_AB_BASE (A, default this checkout's dist), BENCH_AB_CHANGED
// (B, default this checkout's dist), BENCH_AB_BLOCK (calls per block, default 1000), BENCH_AB_PAIRS (default 30),
// BENCH_AB_SDK=1 (both with bench/sdk.mjs's SDK registered and their telemetry on).
import { createHook } from 'node:async_hooks';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { BENCH_INPUT, benchResult } from './baselines.mjs';
import { median, runConcurrent } from './paired.mjs';
import { withPostgres } from './postgres.mjs';
import { createSdk, startSink } from './sdk.mjs';

const HERE = new URL('../dist/', import.meta.url);
const buildUrl = (dir) =>
  dir ? pathToFileURL(`${resolve(dir)}/index.js`).href : new URL('index.js', HERE).href;
const BUILDS = { A: buildUrl(process.env.BENCH_AB_BASE), B: buildUrl(process.env.BENCH_AB_CHANGED) };
const BLOCK = Number(process.env.BENCH_AB_BLOCK ?? 1000);
const PAIRS = Number(process.env.BENCH_AB_PAIRS ?? 30);
const WITH_SDK = process.env.BENCH_AB_SDK === '1';
const CONCURRENCY = 16;

/** Promises made per call of `first` over `calls` calls (a warm process; the hook is on only meanwhile). */
async function promisesPerCall(first, calls) {
  let count = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') count++;
    },
  });
  hook.enable();
  try {
    await runConcurrent(calls, CONCURRENCY, first);
  } finally {
    hook.disable();
  }
  return count / calls;
}

await withPostgres(async (url) => {
  const sink = WITH_SDK ? await startSink() : undefined;
  const sdk = sink ? createSdk(sink.url) : undefined;
  sdk?.register();
  const admin = new pg.Pool({ connectionString: url, max: 1 });
  const tag = Date.now().toString(36);
  const sides = {};
  try {
    for (const [name, href] of Object.entries(BUILDS)) {
      const { createLedger } = await import(href);
      const schema = `bench_ab_${name.toLowerCase()}_${tag}`;
      const ledger = await createLedger({
        connectionString: url,
        schema,
        telemetry: WITH_SDK ? { keyHashSecret: 'bench-key-hash-secret' } : false,
      });
      let n = 0;
      const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: () => benchResult(n++) });
      let block = 0;
      sides[name] = {
        ledger,
        schema,
        cpu: [],
        nextBlock: () => {
          const b = block++;
          return (i) => tool.call(BENCH_INPUT, { key: `ab_${name}_${b}_${i}`, tenant: 'bench' });
        },
      };
    }
    // Pair -1 warms both up and is not counted; the order alternates so neither build always goes first.
    for (let pair = -1; pair < PAIRS; pair++) {
      for (const name of pair % 2 === 0 ? ['A', 'B'] : ['B', 'A']) {
        const first = sides[name].nextBlock();
        const before = process.cpuUsage();
        await runConcurrent(BLOCK, CONCURRENCY, first);
        await sdk?.flush();
        const used = process.cpuUsage(before);
        if (pair >= 0) sides[name].cpu.push((used.user + used.system) / BLOCK);
      }
    }
    const promises = {};
    for (const name of ['A', 'B']) promises[name] = await promisesPerCall(sides[name].nextBlock(), BLOCK);
    const differences = sides.B.cpu.map((b, i) => b - sides.A.cpu[i]);
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(
      `Two builds in one process, ${PAIRS} pairs of alternating blocks of ${BLOCK} first executions at concurrency ${CONCURRENCY}${WITH_SDK ? ', the real SDK registered' : ', telemetry off'}`,
    );
    console.log(
      `A: ${BUILDS.A}\nB: ${BUILDS.B}${BUILDS.A === BUILDS.B ? ' (the same build: the noise alone)' : ''}`,
    );
    console.table({
      'client CPU µs per call, median of the blocks': {
        A: median(sides.A.cpu).toFixed(1),
        B: median(sides.B.cpu).toFixed(1),
      },
      'range of the blocks': {
        A: `${Math.min(...sides.A.cpu).toFixed(0)}–${Math.max(...sides.A.cpu).toFixed(0)}`,
        B: `${Math.min(...sides.B.cpu).toFixed(0)}–${Math.max(...sides.B.cpu).toFixed(0)}`,
      },
      'promises per call': { A: promises.A.toFixed(2), B: promises.B.toFixed(2) },
    });
    console.log(
      `B − A per pair, client CPU µs per call: median ${median(differences).toFixed(1)}, mean ${mean(differences).toFixed(1)}`,
    );
  } finally {
    for (const { ledger, schema } of Object.values(sides)) {
      await ledger.close();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
    await admin.end();
    await sdk?.shutdown();
    sink?.stop();
  }
});
