import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type LedgerOptions, ToolLedgerError } from '../../src/index.js';
import { POOLER_WARNING_CODE } from '../../src/ledger/drivers/pg/pooler.js';
import { type Bouncer, skipWithoutPgbouncer, startPgbouncer } from '../faults/support/pgbouncer.js';
import { type FaultServer, startFaultServer } from '../faults/support/postgres-server.js';
import { postgresBackend, uniqueSchema } from '../support/db.js';

// The failure issue 24 reported, run for real: a Postgres of this file's own behind Debian's PgBouncer in
// transaction mode, 200 keys with 3 concurrent callers each.
const KEYS = 200;
const CALLERS = 3;

/** Counts the pooler warnings emitted while `work` runs. */
async function poolerWarnings<T>(work: () => Promise<T>): Promise<{ result: T; warnings: string[] }> {
  const warnings: string[] = [];
  const onWarning = (warning: Error & { code?: string }) => {
    if (warning.code === POOLER_WARNING_CODE) warnings.push(warning.message);
  };
  process.on('warning', onWarning);
  try {
    const result = await work();
    // process.emitWarning delivers on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    return { result, warnings };
  } finally {
    process.off('warning', onWarning);
  }
}

interface RaceResult {
  readonly runs: Map<string, number>;
  readonly errors: string[];
  readonly stored: Array<{ status: string; n: number }>;
  /** Milliseconds from a first execution's completion to each of its duplicates' answers. */
  readonly wakeMs: number[];
}

async function race(url: string, sql: FaultServer['sql'], options: LedgerOptions): Promise<RaceResult> {
  const schema = uniqueSchema('bouncer');
  // 600 calls queue for a pool of the default size, and pg-pool counts the time in that queue against the connect
  // timeout: on a loaded CI machine the default 5 s ran out (58 LEDGER_UNAVAILABLE in one run). This file is about
  // the pooler's correctness, not the queue's latency, so the queue gets room.
  const ledger = await createLedger({
    connectionString: url,
    telemetry: false,
    schema,
    connectTimeoutSeconds: 60,
    ...options,
  });
  const runs = new Map<string, number>();
  const finished = new Map<string, number>();
  const errors: string[] = [];
  const wakeMs: number[] = [];
  const tool = ledger.tool({
    name: 'charge',
    kind: 'mutation',
    handler: async (_input: unknown, ctx) => {
      const key = ctx.key as string;
      runs.set(key, (runs.get(key) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { key };
    },
  });
  try {
    await Promise.all(
      Array.from({ length: KEYS }, (_, k) =>
        Promise.all(
          Array.from({ length: CALLERS }, async () => {
            try {
              const report = await tool.invoke({}, { key: `k${k}` });
              const now = performance.now();
              if (report.outcome === 'executed') finished.set(`k${k}`, now);
              else if (report.waitedMs !== undefined && report.waitedMs > 0) {
                const done = finished.get(`k${k}`);
                if (done !== undefined) wakeMs.push(now - done);
              }
            } catch (error) {
              errors.push(
                error instanceof ToolLedgerError ? `${error.code}: ${error.message}` : String(error),
              );
            }
          }),
        ),
      ),
    );
  } finally {
    await ledger.close({ timeoutSeconds: 2 });
  }
  const stored = await sql<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM "${schema}".tool_runs GROUP BY status`,
  );
  await sql(`DROP SCHEMA "${schema}" CASCADE`);
  return { runs, errors, stored, wakeMs };
}

function quantiles(values: number[]): string {
  if (values.length === 0) return 'none';
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(0);
  return `n=${sorted.length} p50=${at(0.5)} ms p99=${at(0.99)} ms max=${sorted.at(-1)!.toFixed(0)} ms`;
}

describe.skipIf(skipWithoutPgbouncer())('through PgBouncer in transaction mode', () => {
  let server: FaultServer;
  let bouncer: Bouncer;
  beforeAll(async () => {
    server = await startFaultServer();
    bouncer = await startPgbouncer(server.port);
  });
  afterAll(async () => {
    await bouncer?.stop();
    await server?.destroy();
  });

  it.each([
    ['default options (named statements)', {}],
    ['preparedStatements: false', { preparedStatements: false }],
  ] as const)(
    '%s: every key runs once, every result is saved, no error, and the pooler is named once',
    async (_name, options) => {
      const { result, warnings } = await poolerWarnings(() => race(bouncer.url(), server.sql, options));
      expect(result.errors).toEqual([]);
      expect(result.runs.size).toBe(KEYS);
      expect([...result.runs.values()].every((n) => n === 1)).toBe(true);
      expect(result.stored).toEqual([{ status: 'succeeded', n: KEYS }]);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/PgBouncer/);
      expect(warnings[0]).toMatch(/preparedStatements: false/);
      // The wake-up of a duplicate without LISTEN, as measured (docs/operations.md quotes it).
      console.log(
        `PgBouncer, ${_name}: duplicates' wake-up after the completion: ${quantiles(result.wakeMs)}`,
      );
    },
    120_000,
  );

  it.each([
    ['PgBouncer', () => bouncer.url()],
    ['direct', () => server.url],
  ] as const)(
    '%s: a duplicate waiting on a running key gets its result after the completion (one at a time, measured)',
    async (name, url) => {
      const schema = uniqueSchema('wake');
      const ledger = await createLedger({ connectionString: url(), telemetry: false, schema });
      let handlerEnd = 0;
      const tool = ledger.tool({
        name: 'slow',
        kind: 'mutation',
        handler: async (input: unknown) => {
          const { ms } = input as { ms: number };
          await new Promise((resolve) => setTimeout(resolve, ms));
          handlerEnd = performance.now();
          return ms;
        },
      });
      const wakeMs: number[] = [];
      try {
        // Handler times spread over the waiter's backoff steps (20 ms doubling to 500 ms), one key at a time.
        for (let i = 0; i < 24; i++) {
          const ms = 60 + ((i * 97) % 900);
          // Either may claim first on a loaded machine; the one that replays is the waiter.
          const timed = async () => {
            const report = await tool.invoke({ ms }, { key: `w${i}` });
            return { outcome: report.outcome, at: performance.now() };
          };
          const first = timed();
          await new Promise((resolve) => setTimeout(resolve, 10));
          const answers = await Promise.all([first, timed()]);
          expect(answers.map((a) => a.outcome).sort()).toEqual(['executed', 'replayed']);
          wakeMs.push(answers.find((a) => a.outcome === 'replayed')!.at - handlerEnd);
        }
      } finally {
        await ledger.close();
        await server.sql(`DROP SCHEMA "${schema}" CASCADE`);
      }
      console.log(`${name}: a waiter's answer after the handler returned: ${quantiles(wakeMs)}`);
    },
    120_000,
  );

  it('the same load straight to Postgres listens, and names no pooler', async () => {
    const { result, warnings } = await poolerWarnings(() => race(server.url, server.sql, {}));
    expect(result.errors).toEqual([]);
    expect(result.runs.size).toBe(KEYS);
    expect([...result.runs.values()].every((n) => n === 1)).toBe(true);
    expect(warnings).toEqual([]);
    console.log(
      `direct, default options: duplicates' wake-up after the completion: ${quantiles(result.wakeMs)}`,
    );
  }, 120_000);
});

describe('straight to the shared Postgres', () => {
  const backend = postgresBackend();
  it('finds no pooler: LISTEN is used and nothing is said', async () => {
    const { result, warnings } = await poolerWarnings(async () => {
      const ledger = await backend.open();
      const tool = ledger.tool({
        name: 'slow',
        kind: 'mutation',
        handler: async () => {
          await new Promise((resolve) => setTimeout(resolve, 100));
          return 1;
        },
      });
      try {
        return await Promise.all([tool.invoke({}, { key: 'k' }), tool.invoke({}, { key: 'k' })]);
      } finally {
        await ledger.close();
      }
    });
    expect(result.map((r) => r.outcome).sort()).toEqual(['executed', 'replayed']);
    expect(warnings).toEqual([]);
  });
});
