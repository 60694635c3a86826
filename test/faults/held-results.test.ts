import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger } from '../../src/index.js';
import { uniqueSchema } from '../support/db.js';
import { type FaultServer, startFaultServer } from './support/postgres-server.js';
import { type FaultProxy, startProxy } from './support/proxy.js';

// Issue 22, first bullet: a process that holds a finished result never runs that key's handler again. The
// network dies silently (a black hole, no reset) right after the handler returns, for longer than the lease, so
// the completion is stuck on a dead socket until queryTimeoutSeconds while the lease lapses. Retries from the same
// process then come in: before this, one of them took the lapsed key over and ran the handler a second time.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a finished result this process holds', () => {
  let server: FaultServer;
  let proxy: FaultProxy;
  const ledgers: Ledger[] = [];

  beforeAll(async () => {
    server = await startFaultServer();
    proxy = await startProxy(server.port);
  }, 120_000);

  afterAll(async () => {
    proxy.mode = 'pass';
    await Promise.allSettled(ledgers.map((l) => l.close({ timeoutSeconds: 1 })));
    await proxy?.close();
    await server?.destroy();
  });

  it('is saved by a retry from the same process, never produced again, when the network dies longer than the lease', async () => {
    // Prepare: a lease of 1 s, statements that give up after 4 s, a dead network for 2.5 s.
    const ledger = await createLedger({
      connectionString: proxy.url(),
      schema: uniqueSchema('held'),
      telemetry: false,
      leaseSeconds: 1,
      waitSeconds: 0,
      queryTimeoutSeconds: 4,
      connectTimeoutSeconds: 1,
      statementTimeoutSeconds: 0,
      replayCacheEntries: 0,
    });
    ledgers.push(ledger);
    const effects = new Map<string, number>();
    const tool = ledger.tool({
      name: 'charge',
      kind: 'mutation',
      handler: (raw: unknown) => {
        const input = raw as { n: number };
        effects.set(String(input.n), (effects.get(String(input.n)) ?? 0) + 1);
        // The effect happened; now the network dies before the completion can land.
        proxy.mode = 'blackhole';
        setTimeout(() => {
          proxy.mode = 'pass';
        }, 2500).unref();
        return { charged: input.n };
      },
    });

    // Act: the first call, then retries of the same key from this process after the lease lapsed.
    const first = tool.invoke({ n: 1 }, { key: 'k-held' });
    await sleep(1600);
    const answers: unknown[] = [];
    const deadline = Date.now() + 30_000;
    for (let i = 0; i < 40 && Date.now() < deadline; i++) {
      try {
        answers.push(await tool.invoke({ n: 1 }, { key: 'k-held' }));
        break;
      } catch (error) {
        answers.push(error);
        await sleep(300);
      }
    }
    const firstAnswer = await first.then(
      (report) => report,
      (error: unknown) => error,
    );

    // Assess
    expect(effects.get('1')).toBe(1);
    const last = answers.at(-1) as { outcome?: string; value?: unknown };
    expect(last).toMatchObject({ outcome: 'replayed', value: { charged: 1 } });
    // Every answer is a success or a typed, retryable error: never LEASE_LOST for the first caller whose result
    // a retry saved, and never a second run.
    for (const answer of [...answers.slice(0, -1), firstAnswer]) {
      if (answer instanceof Error) expect(answer).toMatchObject({ name: 'ToolLedgerError', retryable: true });
    }
    expect(firstAnswer).not.toMatchObject({ code: 'LEASE_LOST' });
    const rows = await server.sql<{ status: string; attempt: number }>(
      `SELECT status, attempt FROM "${ledger.config.schema}".tool_runs`,
    );
    expect(rows).toEqual([{ status: 'succeeded', attempt: 1 }]);
  }, 90_000);
});
