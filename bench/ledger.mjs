// Ledger overhead against a hand-written baseline running the same claim and complete SQL through pg.
// Prints throughput and ratios from one run (absolute numbers drift on a shared machine; ratios are the result).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createLedger } from '../dist/index.js';
import { claimSql, completeSql } from '../dist/ledger/sql.js';
import { fmt, throughput, withPostgres } from './postgres.mjs';

const CONCURRENCY = 16;
const CALLS = Number(process.env.BENCH_CALLS ?? 4000);
const RSS_CALLS = Number(process.env.BENCH_RSS_CALLS ?? 100_000);
const input = { customerId: 'cus_42', amountCents: 4500, currency: 'usd', lines: [{ sku: 'A-1', qty: 2 }] };
const handler = (i) => ({ invoiceId: `inv_${i}`, status: 'open', amountCents: 4500 });

const openLedger = (url, schema) =>
  createLedger({ connectionString: url, schema, poolSize: CONCURRENCY, telemetry: false });

async function ledgerRun(url, schema) {
  const ledger = await openLedger(url, schema);
  let n = 0;
  const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: () => handler(n++) });
  const first = await throughput(CALLS, CONCURRENCY, (i) =>
    tool.call(input, { key: `k${i}`, tenant: 'bench' }),
  );
  const replay = await throughput(CALLS, CONCURRENCY, (i) =>
    tool.call(input, { key: `k${i}`, tenant: 'bench' }),
  );
  await ledger.close();
  return { first, replay };
}

async function baselineRun(url, schema, prepared = false) {
  // Same schema and SQL as the ledger, minus everything around it: no validation, hashing reuse, waits or telemetry.
  const setup = await createLedger({ connectionString: url, schema, telemetry: false });
  await setup.close();
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY });
  const claim = claimSql(schema);
  const complete = completeSql(schema);
  const hash = 'f'.repeat(64);
  const query = prepared
    ? (name, text, values) => pool.query({ name, text, values })
    : (_name, text, values) => pool.query(text, values);
  let n = 0;
  const call = async (i) => {
    const owner = randomUUID();
    const { rows } = await query('claim', claim, [
      'bench',
      'create_invoice',
      `k${i}`,
      null,
      hash,
      owner,
      30,
      86400,
      null,
      null,
      null,
      true,
    ]);
    const row = rows[0];
    if (row.claim === 'existing') return row.result_json;
    const value = handler(n++);
    await query('complete', complete, [
      row.id,
      row.attempt,
      owner,
      'succeeded',
      false,
      JSON.stringify(value),
      null,
      86400,
      'tool_ledger_bench',
    ]);
    return value;
  };
  const first = await throughput(CALLS, CONCURRENCY, call);
  const replay = await throughput(CALLS, CONCURRENCY, call);
  await pool.end();
  return { first, replay };
}

async function rssGrowth(url, schema) {
  const ledger = await openLedger(url, schema);
  const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: () => handler(0) });
  // Warm up so the measurement is growth, not first-use allocation.
  await throughput(2000, CONCURRENCY, (i) => tool.call(input, { key: `w${i}` }));
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  // One call in ten is new; the rest replay, as agents' retries do.
  await throughput(RSS_CALLS, CONCURRENCY, (i) => tool.call(input, { key: `r${i % (RSS_CALLS / 10)}` }));
  globalThis.gc?.();
  const after = process.memoryUsage().rss;
  await ledger.close();
  return { before, after };
}

const preparedBaselineRun = (url, schema) => baselineRun(url, schema, true);

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

await withPostgres(async (url) => {
  const admin = new pg.Pool({ connectionString: url });
  const tag = Date.now().toString(36);
  const schemas = [];
  const schema = (name) => {
    schemas.push(`bench_${name}_${tag}`);
    return schemas.at(-1);
  };
  try {
    // Each round rotates the order, so every side runs first, middle and last equally often and none always meets
    // a warmer server; a throwaway warm-up round JIT-compiles every path first. The median round counts.
    const sides = [baselineRun, ledgerRun, preparedBaselineRun];
    for (const run of sides) await run(url, schema(`warmup_${run.name}`));
    const rounds = [];
    for (let r = 0; r < ROUNDS; r++) {
      const results = {};
      for (let i = 0; i < sides.length; i++) {
        const run = sides[(r + i) % sides.length];
        results[run.name] = await run(url, schema(`${run.name}_${r}`));
      }
      rounds.push(results);
    }
    const pick = (side, phase) => median(rounds.map((r) => r[side][phase]));
    const ratio = (phase, base = 'baselineRun') =>
      median(rounds.map((r) => r.ledgerRun[phase] / r[base][phase]));
    console.log(
      'baseline: the same claim/complete SQL as plain parameterized pg queries; tool-ledger prepares its statements (named), shown also against a prepared baseline.',
    );
    console.log(
      `tool-ledger vs hand-written pg baseline: ${CALLS} calls per phase, concurrency ${CONCURRENCY}, median of ${ROUNDS} rounds`,
    );
    const row = (phase, target) => ({
      'tool-ledger': fmt(pick('ledgerRun', phase)),
      baseline: fmt(pick('baselineRun', phase)),
      ratio: ratio(phase).toFixed(2),
      target,
      'baseline, prepared': fmt(pick('preparedBaselineRun', phase)),
      'ratio vs prepared': ratio(phase, 'preparedBaselineRun').toFixed(2),
    });
    console.table({
      'first execution (calls/s)': row('first', '>= 0.90'),
      'replay (calls/s)': row('replay', '>= 1.00'),
    });
    const rss = await rssGrowth(url, schema('rss'));
    const mb = (b) => (b / 1024 / 1024).toFixed(1);
    console.log(
      `RSS over ${RSS_CALLS.toLocaleString('en-US')} calls (10% new keys): ${mb(rss.before)} MiB -> ${mb(rss.after)} MiB (growth ${mb(rss.after - rss.before)} MiB)${globalThis.gc ? '' : ' [run node with --expose-gc for a steadier figure]'}`,
    );
  } finally {
    for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await admin.end();
  }
});
