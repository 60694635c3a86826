// What a user weighs tool-ledger against. The hand-written version: a table of its own, INSERT … ON CONFLICT DO
// NOTHING RETURNING, then an UPDATE with the result; a replay is that insert missing, then a SELECT. No NOTIFY,
// no leases, a pool with one connection per concurrent caller. The same-SQL version sends tool-ledger's own
// statements for a first execution (insert, completion; the claim for a taken key) through a plain pool, named as
// its driver sends them, so the gap between it and tool-ledger is the library's code rather than its SQL.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { createLedger } from '../dist/index.js';
import { newLeaseOwner } from '../dist/ledger/fence.js';
import { claimSql, insertRunSql } from '../dist/ledger/sql/claim.js';
import { claimParams, insertRunParams } from '../dist/ledger/sql/claim-fields.js';
import { completeSql, completionParams } from '../dist/ledger/sql/runs.js';

export const BENCH_INPUT = {
  customerId: 'cus_42',
  amountCents: 4500,
  currency: 'usd',
  lines: [{ sku: 'A-1', qty: 2 }],
};
export const benchResult = (i) => ({ invoiceId: `inv_${i}`, status: 'open', amountCents: 4500 });
export const benchKey = (tag, c, i) => `${tag}_${c}_${i}`;

/**
 * `instrument(work, key)` runs around each call's work; the telemetry benches pass a hand-written span, log record
 * and counter. `work(observe)` reports to an optional observer what a richer instrumentation records: the parameter
 * hash, each statement's duration, the handler's duration and whether the call was a replay.
 */
export async function handWritten(url, schema, { concurrency, instrument, named = false } = {}) {
  const pool = new pg.Pool({ connectionString: url, max: concurrency });
  // An idle client's error (the bench's server stopping while a side is still open) must not crash the run.
  pool.on('error', () => {});
  const t = `"${schema}".runs`;
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await pool.query(`CREATE TABLE IF NOT EXISTS ${t} (
    tenant_id text NOT NULL, tool_name text NOT NULL, idempotency_key text NOT NULL,
    parameter_hash text NOT NULL, status text NOT NULL DEFAULT 'in_progress', result_json json,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, tool_name, idempotency_key))`);
  const insert = `INSERT INTO ${t} (tenant_id, tool_name, idempotency_key, parameter_hash) VALUES ($1, $2, $3, $4)
    ON CONFLICT DO NOTHING RETURNING idempotency_key`;
  const update = `UPDATE ${t} SET status = 'succeeded', result_json = $4::json
    WHERE tenant_id = $1 AND tool_name = $2 AND idempotency_key = $3`;
  const select = `SELECT parameter_hash, status, result_json FROM ${t}
    WHERE tenant_id = $1 AND tool_name = $2 AND idempotency_key = $3`;
  let n = 0;
  // `named`: the same statements prepared once per connection (pg's `name`), as a user would behind a pooler that
  // keeps them (PgBouncer's max_prepared_statements).
  const names = new Map([
    [insert, 'hand_insert'],
    [update, 'hand_update'],
    [select, 'hand_select'],
  ]);
  const send = named
    ? (text, values) => pool.query({ name: names.get(text), text, values })
    : (text, values) => pool.query(text, values);
  // Without an observer, the plain query: the bare baseline pays for nothing it does not do.
  const query = (observe, operation, text, values) =>
    observe ? timed(observe, operation, () => send(text, values)) : send(text, values);
  const call = async (key, input, observe) => {
    const hash = createHash('sha256').update(JSON.stringify(input)).digest('hex');
    observe?.paramsHash(hash);
    const args = ['bench', 'create_invoice', key];
    const inserted = await query(observe, 'claim', insert, [...args, hash]);
    if (inserted.rowCount === 0) {
      const { rows } = await query(observe, 'lookup', select, args);
      if (rows[0].parameter_hash !== hash) throw new Error('key reused with different input');
      observe?.replayed();
      return rows[0].result_json;
    }
    const started = observe ? performance.now() : 0;
    const value = benchResult(n++);
    observe?.executed((performance.now() - started) / 1000);
    await query(observe, 'complete', update, [...args, JSON.stringify(value)]);
    return value;
  };
  const wrapped = instrument ? (key, input) => instrument((observe) => call(key, input, observe), key) : call;
  return {
    first: (c, i) => wrapped(benchKey('hand', c, i), BENCH_INPUT),
    replay: (c, i) => wrapped(benchKey('hand', c, i), BENCH_INPUT),
    close: () => pool.end(),
  };
}

/** Awaits `run()` and reports its seconds to `observe.operation`. */
async function timed(observe, operation, run) {
  const started = performance.now();
  const value = await run();
  observe.operation(operation, (performance.now() - started) / 1000);
  return value;
}

/** tool-ledger's claim and complete SQL, NOTIFY included, as plain parameterized pg queries. */
export async function sameSql(url, schema, { concurrency }) {
  const setup = await createLedger({ connectionString: url, schema, telemetry: false });
  await setup.close();
  const pool = new pg.Pool({ connectionString: url, max: concurrency });
  // What the table layout sends for a first execution on pg, named as its driver names them: the bare insert, then
  // the fenced completion; a key the insert finds taken goes through the claim, whose row holds the result.
  const insert = { name: 'same_insert', text: insertRunSql(schema) };
  const claim = { name: 'same_claim', text: claimSql(schema) };
  const complete = { name: 'same_complete', text: completeSql(schema) };
  const hash = 'f'.repeat(64);
  let n = 0;
  const call = async (key) => {
    const fields = {
      tenant: 'bench',
      tool: 'create_invoice',
      key,
      user: undefined,
      paramsHash: hash,
      leaseOwner: newLeaseOwner(),
      leaseSeconds: 30,
      ttlSeconds: 86400,
      traceId: undefined,
      spanId: undefined,
      jobId: undefined,
      allowLeaseTakeover: true,
      wouldWait: true,
    };
    const inserted = await pool.query({ ...insert, values: insertRunParams(fields) });
    if (inserted.rows.length === 0) {
      const { rows } = await pool.query({ ...claim, values: claimParams(fields) });
      return rows[0].result_json;
    }
    const value = benchResult(n++);
    const completion = {
      runKey: { tenant: fields.tenant, tool: fields.tool, key },
      attempt: 1,
      leaseOwner: fields.leaseOwner,
      status: 'succeeded',
      final: false,
      resultJson: JSON.stringify(value),
      ttlSeconds: fields.ttlSeconds,
    };
    const { rows } = await pool.query({
      ...complete,
      values: completionParams(completion, null, 'tool_ledger_bench'),
    });
    if (rows.length !== 1) throw new Error(`the same-SQL completion of ${key} was fenced out`);
    return value;
  };
  return {
    first: (c, i) => call(benchKey('same', c, i)),
    replay: (c, i) => call(benchKey('same', c, i)),
    close: () => pool.end(),
  };
}

/** tool-ledger with default options (its own pool, default size), telemetry as given. */
export async function toolLedger(url, schema, options = {}) {
  const ledger = await createLedger({ connectionString: url, schema, telemetry: false, ...options });
  let n = 0;
  const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: () => benchResult(n++) });
  const tag = `tl_${schema}`;
  return {
    ledger,
    first: (c, i) => tool.call(BENCH_INPUT, { key: benchKey(tag, c, i), tenant: 'bench' }),
    replay: (c, i) => tool.call(BENCH_INPUT, { key: benchKey(tag, c, i), tenant: 'bench' }),
    close: () => ledger.close(),
  };
}
