import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger, ToolLedgerError } from '../../src/index.js';
import type { PgPoolLike } from '../../src/ledger/drivers/pg/client.js';
import { pgDriver } from '../../src/ledger/drivers/pg/pg-driver.js';
import { type FaultServer, startFaultServer } from './support/postgres-server.js';
import { type FaultProxy, startProxy } from './support/proxy.js';

let server: FaultServer;
let proxy: FaultProxy;
let crashes = 0;
const onCrash = () => {
  crashes++;
};
beforeAll(async () => {
  server = await startFaultServer();
  proxy = await startProxy(server.port);
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
});
afterAll(async () => {
  process.off('uncaughtException', onCrash);
  process.off('unhandledRejection', onCrash);
  await proxy?.close();
  await server?.destroy();
});

async function transactionalLedger(): Promise<{
  ledger: Ledger;
  schema: string;
  tool: ReturnType<Ledger['tool']>;
}> {
  const schema = `steps_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const ledger = await createLedger({
    connectionString: proxy.url(),
    schema,
    telemetry: false,
    connectTimeoutSeconds: 1,
    queryTimeoutSeconds: 2,
    waitSeconds: 3,
  });
  await server.sql(`CREATE TABLE "${schema}".effects (key text NOT NULL)`);
  const tool = ledger.tool({
    name: 'transfer',
    kind: 'mutation',
    transactional: true,
    handler: async (_input: unknown, ctx) => {
      await ctx.db!.query(`INSERT INTO "${schema}".effects (key) VALUES ($1)`, [ctx.key]);
      return { moved: 1 };
    },
  });
  return { ledger, schema, tool };
}

describe('a connection that ends at each step of a transactional call', () => {
  // Each marker is a statement's text as it crosses the proxy: the reset lands before it reaches the server, or
  // right after (the server acts on it; only its answer is lost).
  it.each([
    // The claim, before the transaction: a lost answer is recognised by this process's retry (attempt 1, no
    // waiting out the lease).
    ['idempotency_key', 'before', 'executed'],
    ['idempotency_key', 'after', 'executed'],
    ['BEGIN', 'before', 'executed'],
    ['BEGIN', 'after', 'executed'],
    ['.effects', 'before', 'executed'],
    ['.effects', 'after', 'executed'],
    ['completed_at = now()', 'before', 'executed'],
    ['completed_at = now()', 'after', 'executed'],
    ['COMMIT', 'before', 'executed'],
    ['COMMIT', 'after', 'replayed'],
  ] as const)(
    '%s (%s): the process lives, the call ends typed, a retry settles it once',
    async (marker, when, retried) => {
      const { ledger, schema, tool } = await transactionalLedger();
      const crashesBefore = crashes;
      const reset = proxy.resetOn(marker, when);
      const first = await tool.invoke({}, { key: 'k' }).then(
        (report) => ({ report }),
        (error: unknown) => ({ error }),
      );
      await reset;
      if ('error' in first) {
        expect(first.error).toBeInstanceOf(ToolLedgerError);
        expect(first.error).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });
        if (marker === 'COMMIT' && when === 'after') {
          expect((first.error as Error).message).toMatch(/whether it committed is unknown/);
          expect((first.error as Error).message).toMatch(/same idempotency key/);
        }
        // The retry a careful client makes: same key, until it gets an answer it can stop on.
        let outcome: string | undefined;
        let attempt: number | undefined;
        for (let i = 0; i < 20 && outcome === undefined; i++) {
          try {
            ({ outcome, attempt } = await tool.invoke({}, { key: 'k' }));
          } catch (error) {
            expect(error).toBeInstanceOf(ToolLedgerError);
            expect((error as ToolLedgerError).retryable).toBe(true);
          }
        }
        expect(outcome).toBe(retried);
        if (marker === 'idempotency_key') expect(attempt).toBe(1);
      } else {
        // pg's BEGIN on a stale client is retried once on a fresh one, so the call itself may succeed.
        expect(marker).toBe('BEGIN');
      }
      const effects = await server.sql(`SELECT key FROM "${schema}".effects`);
      expect(effects).toEqual([{ key: 'k' }]);
      await ledger.close({ timeoutSeconds: 1 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(crashes).toBe(crashesBefore);
    },
  );
});

describe('LISTEN', () => {
  it('is re-established after its connection is terminated', async () => {
    const pool = new pg.Pool({ connectionString: server.url, max: 2 });
    pool.on('error', () => {});
    const driver = pgDriver(pool as unknown as PgPoolLike, {
      ownsPool: true,
      preparedStatements: true,
      answerTimeoutMs: 3000,
    });
    const received: string[] = [];
    await driver.listen('fault_channel', (payload) => received.push(payload));
    await server.sql(`SELECT pg_notify('fault_channel', 'before')`);
    for (let i = 0; i < 100 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(received).toEqual(['before']);

    expect(await server.terminateAll()).toBeGreaterThan(0);
    // No waiter calls listen() again: the driver must come back by itself.
    for (let i = 0; i < 200 && !received.includes('after'); i++) {
      await server.sql(`SELECT pg_notify('fault_channel', 'after')`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(received).toContain('after');
    await driver.close();
    expect(crashes).toBe(0);
  });
});

describe('close() on a silently dead network', () => {
  it('returns within timeoutSeconds + connectTimeoutSeconds + queryTimeoutSeconds, and the calls settle typed', async () => {
    const { ledger, tool } = await transactionalLedger();
    await tool.call({}, { key: 'warm' });
    proxy.mode = 'blackhole';
    try {
      const calls = Array.from({ length: 4 }, (_, i) =>
        tool.call({}, { key: `dark-${i}` }).then(
          () => undefined,
          (error: unknown) => error,
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      // The stated bound (close timeout 0.5 s, connect 1 s, query 2 s) plus slack for a loaded machine.
      const boundMs = (0.5 + 1 + 2 + 2) * 1000;
      const closed = await Promise.race([
        ledger.close({ timeoutSeconds: 0.5 }).then(() => 'closed'),
        new Promise((resolve) => setTimeout(() => resolve('hung'), boundMs)),
      ]);
      expect(closed).toBe('closed');
      for (const error of await Promise.all(calls)) {
        expect(error).toBeInstanceOf(ToolLedgerError);
      }
    } finally {
      proxy.mode = 'pass';
    }
  });
});
