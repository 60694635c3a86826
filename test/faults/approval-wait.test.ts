import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger, type ToolLedgerError } from '../../src/index.js';
import { uniqueSchema } from '../support/db.js';
import { type FaultServer, startFaultServer } from './support/postgres-server.js';

// A call waiting for a person's decision (`approvalWaitSeconds`, docs/ledger.md "Approvals") when the database
// fails under it, on a Postgres of this file's own: the decision still reaches it, and nothing runs twice.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('waiting for an approval when the database fails', () => {
  let server: FaultServer;
  const ledgers: Ledger[] = [];

  beforeAll(async () => {
    server = await startFaultServer();
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(ledgers.map((l) => l.close({ timeoutSeconds: 1 })));
    await server?.destroy();
  });

  async function open(schema: string) {
    const ledger = await createLedger({
      connectionString: server.url,
      schema,
      telemetry: false,
      waitSeconds: 0,
      approvalWaitSeconds: 20,
      connectTimeoutSeconds: 1,
    });
    ledgers.push(ledger);
    const runs: unknown[] = [];
    const tool = ledger.tool({
      name: 'refund',
      kind: 'mutation',
      approval: 'required',
      handler: (input: unknown) => {
        runs.push(input);
        return { refunded: true };
      },
    });
    return { ledger, tool, runs };
  }

  /** Approves from a ledger of its own, opened after the fault: never the waiting call's pool. */
  async function approve(schema: string, key: string) {
    const desk = await createLedger({ connectionString: server.url, schema, telemetry: false });
    try {
      return await desk.approve({ tenant: 'acme', tool: 'refund', key, by: 'ops@acme' });
    } finally {
      await desk.close();
    }
  }

  /** The call's report or its error, so a rejection before the test reads it is not unhandled. */
  const settled = <T>(call: Promise<T>) =>
    call.then(
      (report) => ({ report, error: undefined }),
      (error: ToolLedgerError) => ({ report: undefined, error }),
    );

  /** Polls (at most 100 times, 50 ms apart) until the key awaits a decision. */
  async function untilAwaiting(schema: string, key: string) {
    for (let i = 0; i < 100; i++) {
      const rows = await server.sql<{ status: string }>(
        `SELECT status FROM "${schema}".tool_runs WHERE idempotency_key = $1`,
        [key],
      );
      if (rows[0]?.status === 'awaiting_approval') return;
      await sleep(50);
    }
    throw new Error(`key ${key} never awaited a decision`);
  }

  it('a decision reaches a waiting call whose LISTEN connection was terminated, and it runs once', async () => {
    const schema = uniqueSchema('apwait');
    const { tool, runs } = await open(schema);
    const waiting = settled(tool.invoke({ order: 'o_1' }, { key: 'k-listen', tenant: 'acme', user: 'u_1' }));
    await untilAwaiting(schema, 'k-listen');
    // Only the connection that listens (the pool's stay): the notice of the decision may find nobody, so the
    // waiting call must find the decision by its reopened LISTEN or its poll.
    // The wait subscribes once the pooler probe has answered: look for it a while (at most 100 times, 50 ms apart).
    let killed = 0;
    for (let i = 0; i < 100 && killed === 0; i++) {
      if (i > 0) await sleep(50);
      const [row] = await server.sql<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
         WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND query ILIKE 'LISTEN%'`,
      );
      killed = row?.n ?? 0;
    }
    expect(killed).toBeGreaterThan(0);
    await approve(schema, 'k-listen');
    const { report, error } = await waiting;
    expect(error).toBeUndefined();
    expect(report).toMatchObject({ outcome: 'approved', value: { refunded: true } });
    expect(runs).toHaveLength(1);
  });

  it('a restart of Postgres mid-wait is waited out: the approval given after it runs the call once', async () => {
    // Every connection dies, the pool's too, and for a moment nothing answers: the wait's reads of the key's state
    // fail meanwhile, which is one more step of the wait, not the call's end.
    const schema = uniqueSchema('apwait');
    const { tool, runs } = await open(schema);
    const call = () => tool.invoke({ order: 'o_2' }, { key: 'k-restart', tenant: 'acme', user: 'u_1' });
    const waiting = settled(call());
    await untilAwaiting(schema, 'k-restart');
    await server.restart('fast');
    await approve(schema, 'k-restart');
    const { report, error } = await waiting;
    expect(error).toBeUndefined();
    expect(report).toMatchObject({ outcome: 'approved', value: { refunded: true } });
    expect(await call()).toMatchObject({ outcome: 'replayed' });
    expect(runs).toHaveLength(1);
  });
});
