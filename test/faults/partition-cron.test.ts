import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger } from '../../src/index.js';
import { listPartitionsSql } from '../../src/ledger/partitioned-sql.js';
import { missing, type Requirement } from '../support/requires.js';
import { type FaultServer, startFaultServer } from './support/postgres-server.js';

/**
 * The partitioned layout maintained by pg_cron, not by the ledger: a Postgres of the test's own with pg_cron
 * preloaded runs `tool_ledger_maintain()` every minute (pg_cron 1.4, Debian bookworm's, schedules by the minute),
 * which drops the partitions whose rows expired and makes those ahead.
 */
const PG_CRON: Requirement = {
  name: 'pg_cron',
  install: 'Debian/Ubuntu: apt-get install postgresql-15-cron',
  missing: () =>
    existsSync('/usr/share/postgresql/15/extension/pg_cron.control')
      ? undefined
      : 'is not installed for Postgres 15',
};

const skip = missing('test/faults/partition-cron.test.ts', 'pg_cron maintenance', PG_CRON);

describe.skipIf(skip)('partitioned layout maintained by pg_cron', () => {
  let server: FaultServer;
  let ledger: Ledger;
  const schema = 'cron_ledger';

  beforeAll(async () => {
    server = await startFaultServer({
      settings: {
        shared_preload_libraries: 'pg_cron',
        'cron.database_name': 'postgres',
        // Jobs run in background workers: no connection, password or host to configure.
        'cron.use_background_workers': 'on',
        max_worker_processes: '16',
      },
    });
    await server.sql('CREATE EXTENSION pg_cron');
  }, 60_000);

  afterAll(async () => {
    await ledger?.close({ timeoutSeconds: 0.5 });
    await server?.destroy();
  });

  it('drops the partitions of expired rows and makes the next ones, run by cron', async () => {
    ledger = await createLedger({
      connectionString: server.url,
      schema,
      telemetry: false,
      ttlSeconds: 1,
      layout: 'partitioned',
      partitionWidthSeconds: 5,
    });
    const tool = ledger.tool({ name: 'ping', kind: 'mutation', handler: () => 'pong' });
    for (const key of ['a', 'b', 'c']) await tool.call({}, { key });
    const names = async () =>
      (await server.sql<{ name: string }>(listPartitionsSql(schema))).map((p) => p.name);
    const [{ part } = { part: '' }] = await server.sql<{ part: string }>(
      `SELECT DISTINCT tableoid::regclass::text AS part FROM ${schema}.tool_runs LIMIT 1`,
    );
    const before = await names();

    await server.sql(
      `SELECT cron.schedule('tool-ledger-maintain', '* * * * *', $$SELECT * FROM ${schema}.tool_ledger_maintain(600, 0)$$)`,
    );
    // At most three minutes: cron's next minute, plus a run that found the partition not ended yet.
    let rows = 3;
    for (let i = 0; i < 180 && rows > 0; i++) {
      await sleep(1000);
      [{ rows } = { rows: 0 }] = await server.sql<{ rows: number }>(
        `SELECT count(*)::int AS rows FROM ${schema}.tool_runs`,
      );
    }
    expect(rows).toBe(0);
    const after = await names();
    expect(after).not.toContain(part.replace(`${schema}.`, ''));
    // Ten minutes ahead in five-second partitions: far more than the start made.
    expect(after.length).toBeGreaterThan(before.length);
    const runs = await server.sql<{ status: string }>(
      `SELECT status FROM cron.job_run_details ORDER BY start_time DESC LIMIT 1`,
    );
    expect(runs[0]?.status).toBe('succeeded');
  }, 240_000);
});
