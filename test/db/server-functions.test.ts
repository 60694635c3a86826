import { createHash } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createLedger, type LedgerOptions } from '../../src/index.js';
import { insertRunSql } from '../../src/ledger/sql/claim.js';
import { insertRunParams } from '../../src/ledger/sql/claim-fields.js';
import { completeSql } from '../../src/ledger/sql/runs.js';
import {
  completeCallSql,
  completedFromTimes,
  completeTimesCallSql,
  insertRunCallSql,
  insertRunIdCallSql,
} from '../../src/ledger/sql/server-functions.js';
import { databaseUrl, ownSchemas } from '../support/db.js';

// The server functions (src/ledger/sql/server-functions.ts): the table layout sends migration 14's when its
// statements go unnamed (preparedStatements: false here; behind PgBouncer, test/db/pgbouncer.test.ts runs them),
// and each answers as its statement does; migration 12's, which processes of versions 12 and 13 call, still do.

const { admin, fresh } = ownSchemas('server_fn');
// The ledger's own connections count their function calls (a superuser setting, per connection).
const counting = () => {
  const url = new URL(databaseUrl());
  url.searchParams.set('options', '-c track_functions=pl');
  return url.href;
};

/** The schema's function calls, once its connections have reported them (bounded: 40 reads, 250 ms apart). */
async function functionCalls(schema: string, expected: (calls: Record<string, number>) => boolean) {
  let calls: Record<string, number> = {};
  for (let i = 0; i < 40; i++) {
    const { rows } = await admin.query<{ funcname: string; calls: string }>(
      'SELECT funcname, calls FROM pg_stat_user_functions WHERE schemaname = $1',
      [schema],
    );
    calls = Object.fromEntries(rows.map((r) => [r.funcname, Number(r.calls)]));
    if (expected(calls)) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return calls;
}

async function ledgerOn(schema: string, options: LedgerOptions) {
  // waitSeconds: the duplicate waits for the first execution (10 s is the default; said here, as it is relied on).
  const ledger = await createLedger({
    connectionString: counting(),
    schema,
    telemetry: false,
    waitSeconds: 10,
    ...options,
  });
  let runs = 0;
  const tool = ledger.tool({
    name: 'charge',
    kind: 'mutation',
    handler: async (input: unknown) => {
      runs++;
      await new Promise((resolve) => setTimeout(resolve, 200));
      return { charged: (input as { cents: number }).cents };
    },
  });
  return { ledger, tool, runs: () => runs };
}

describe('server functions for unnamed statements', () => {
  it('preparedStatements: false runs a first execution through them, and its completion wakes a waiting duplicate', async () => {
    const schema = fresh();
    const { ledger, tool, runs } = await ledgerOn(schema, { preparedStatements: false });
    // A listener of our own on the ledger's channel: the wake-up is the function's NOTIFY, not a poll.
    const listener = new pg.Client({ connectionString: databaseUrl() });
    await listener.connect();
    const channel = `tool_ledger_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
    const notified: string[] = [];
    listener.on('notification', (n) => notified.push(n.payload ?? ''));
    await listener.query(`LISTEN ${channel}`);
    try {
      const first = tool.invoke({ cents: 500 }, { key: 'order-1' });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const duplicate = tool.invoke({ cents: 500 }, { key: 'order-1' });
      const [a, b] = await Promise.all([first, duplicate]);
      expect([a.outcome, b.outcome]).toEqual(['executed', 'replayed']);
      expect(b.value).toEqual({ charged: 500 });
      expect(runs()).toBe(1);
      await expect(tool.call({ cents: 900 }, { key: 'order-1' })).rejects.toMatchObject({
        code: 'KEY_REUSED',
      });
      const { rows } = await admin.query(
        `SELECT id::text AS id, status, result_json FROM "${schema}".tool_runs`,
      );
      expect(rows).toEqual([{ id: expect.any(String), status: 'succeeded', result_json: { charged: 500 } }]);
      expect(notified).toEqual([rows[0].id]);
    } finally {
      await ledger.close();
      await listener.end();
    }
    const calls = await functionCalls(schema, (c) => (c.tool_ledger_complete_run_times ?? 0) >= 1);
    expect(calls.tool_ledger_insert_run_id).toBeGreaterThanOrEqual(1);
    // One completion, or two: a duplicate that finds this process still saving the result saves it too (fenced,
    // so only one of the two writes the row; see BackgroundSaves). Either way through the function.
    expect(calls.tool_ledger_complete_run_times).toBeGreaterThanOrEqual(1);
    expect(calls.tool_ledger_insert_run).toBeUndefined();
    expect(calls.tool_ledger_complete_run).toBeUndefined();
  });

  it('named statements (the default) send the statements themselves', async () => {
    const schema = fresh();
    const { ledger, tool } = await ledgerOn(schema, {});
    try {
      for (let i = 0; i < 5; i++) await tool.call({ cents: i }, { key: `order-${i}` });
    } finally {
      await ledger.close();
    }
    // Give the connections the time they take to report (as above), then find nothing.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await functionCalls(schema, () => true)).toEqual({});
  });

  it('answer as their statements do (migrations 12 and 14): a fresh key, a taken key, a completion, a fenced-out one', async () => {
    const schema = fresh();
    const setup = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    await setup.close();
    const fields = {
      tenant: 'acme',
      tool: 'charge',
      key: 'k',
      user: 'u1',
      paramsHash: 'h'.repeat(64),
      leaseOwner: 'owner-1',
      leaseSeconds: 30,
      ttlSeconds: 3600,
      traceId: undefined,
      spanId: undefined,
      jobId: 'job-1',
      allowLeaseTakeover: true,
      wouldWait: false,
    };
    // Each form in a transaction rolled back, so all meet the same row.
    const client = await admin.connect();
    const rolledBack = async (text: string, params: unknown[]) => {
      await client.query('BEGIN');
      try {
        return (await client.query(text, params)).rows;
      } finally {
        await client.query('ROLLBACK');
      }
    };
    // Migration 14's scalars, in the rows the statement would give: none for NULL.
    const scalarInsert = async (params: unknown[]) =>
      (await rolledBack(insertRunIdCallSql(schema), params)).filter((row) => row.id !== null);
    const scalarCompletion = async (params: unknown[]) =>
      (await rolledBack(completeTimesCallSql(schema), params)).flatMap(
        (row) => completedFromTimes(row.times) ?? [],
      );
    const all = async (
      statement: string,
      call: string,
      scalar: (params: unknown[]) => Promise<unknown[]>,
      params: unknown[],
    ) => ({
      viaStatement: await rolledBack(statement, params),
      viaFunction: await rolledBack(call, params),
      viaScalar: await scalar(params),
    });
    const insertAll = (params: unknown[]) =>
      all(insertRunSql(schema), insertRunCallSql(schema), scalarInsert, params);
    const fresh1 = await insertAll(insertRunParams(fields));
    expect(fresh1).toEqual({
      viaStatement: [{ id: expect.any(String) }],
      viaFunction: [{ id: expect.any(String) }],
      viaScalar: [{ id: expect.any(String) }],
    });

    await admin.query(insertRunSql(schema), insertRunParams(fields));
    const taken = await insertAll(insertRunParams(fields));
    expect(taken).toEqual({ viaStatement: [], viaFunction: [], viaScalar: [] });

    const completion = (owner: string) => [
      'acme',
      'charge',
      'k',
      1,
      owner,
      'succeeded',
      false,
      '{"ok":true}',
      null,
      3600,
      'c',
    ];
    const completeAll = (params: unknown[]) =>
      all(completeSql(schema), completeCallSql(schema), scalarCompletion, params);
    const done = await completeAll(completion('owner-1'));
    for (const rows of [done.viaStatement, done.viaFunction, done.viaScalar]) {
      expect(rows).toHaveLength(1);
      expect(rows[0].completed_at_ms).toEqual(expect.any(Number));
      expect(rows[0].expires_in_ms).toBeGreaterThan(3_500_000);
    }
    const fencedOut = await completeAll(completion('owner-2'));
    expect(fencedOut).toEqual({ viaStatement: [], viaFunction: [], viaScalar: [] });
    client.release();
  });
});
