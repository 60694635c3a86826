import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, isToolLedgerError } from '../../src/index.js';
import { ASYNC_STANDBY_WARNING_CODE } from '../../src/ledger/replication.js';
import { type FailoverMode, type FailoverRow, runFailover } from './support/failover.js';
import {
  POSTGRES_MISSING,
  postgresBin,
  type ReplicatedPair,
  startReplicatedPair,
} from './support/replication.js';

// A primary and a streaming standby of this file's own on loopback; under load the primary crashes
// (pg_ctl stop -m immediate) and the standby is promoted. The ledger reaches the read-write node through a libpq
// multi-host URL that lists the standby first, with target_session_attrs=read-write (one scenario: readWriteClient
// in a pool of the test's own). docs/operations.md ("Failover") quotes these rows.
const missing = postgresBin() === undefined;
if (missing && process.env.CI !== 'true') console.warn(`skipped: ${POSTGRES_MISSING}`);

async function measured(mode: FailoverMode): Promise<{ row: FailoverRow; warnings: string[] }> {
  const warnings: string[] = [];
  const onWarning = (warning: Error & { code?: string }) => {
    if (warning.code === ASYNC_STANDBY_WARNING_CODE) warnings.push(warning.message);
  };
  process.on('warning', onWarning);
  try {
    const row = await runFailover(mode);
    console.log(`failover, ${mode.name}: ${JSON.stringify(row)}`);
    return { row, warnings };
  } finally {
    process.off('warning', onWarning);
  }
}

describe.skipIf(missing && process.env.CI !== 'true')('a multi-host URL that lists the standby first', () => {
  let pair: ReplicatedPair;
  beforeAll(async () => {
    pair = await startReplicatedPair();
    await pair.configure({ synchronous: false });
    await pair.streaming(false);
  }, 120_000);
  afterAll(() => pair?.destroy());

  const url = (target: string) =>
    `postgres://postgres@127.0.0.1:${pair.standby.port},127.0.0.1:${pair.primary.port}/postgres?target_session_attrs=${target}`;

  it.each(['read-write', 'primary'])(
    'target_session_attrs=%s: the ledger writes on the primary',
    async (target) => {
      const schema = `mh_${target.replace('-', '_')}`;
      const ledger = await createLedger({ connectionString: url(target), schema, telemetry: false });
      try {
        const tool = ledger.tool({ name: 'note', kind: 'mutation', handler: async () => 'noted' });
        expect(await tool.invoke({}, { key: 'k' })).toMatchObject({ outcome: 'executed', value: 'noted' });
        const [row] = await pair.primary.sql<{ status: string }>(`SELECT status FROM "${schema}".tool_runs`);
        expect(row?.status).toBe('succeeded');
      } finally {
        await ledger.close();
      }
    },
  );

  it('target_session_attrs=any takes the standby as libpq does, and the ledger cannot write there', async () => {
    const error = await createLedger({
      connectionString: url('any'),
      schema: 'mh_any',
      telemetry: false,
    }).then(
      async (ledger) => {
        await ledger.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(isToolLedgerError(error) && error.code).toBe('LEDGER_UNAVAILABLE');
    expect(String((error as Error).cause ?? (error as Error).message)).toMatch(/read-only transaction/);
  });
});

describe.skipIf(missing && process.env.CI !== 'true')('failover to a promoted standby under load', () => {
  it.each([
    { name: 'synchronous, synchronous_commit = on', synchronous: true, commit: 'on' },
    { name: 'synchronous, synchronous_commit = remote_apply', synchronous: true, commit: 'remote_apply' },
    {
      name: 'synchronous, on, 200 ms replication delay',
      synchronous: true,
      commit: 'on',
      replicationDelayMs: 200,
    },
    {
      name: 'synchronous, synchronous_commit = on, readWriteClient in a pool of its own',
      synchronous: true,
      commit: 'on',
      via: 'readWriteClient',
    },
  ] satisfies FailoverMode[])(
    '$name: no key runs twice and no acknowledged result is lost',
    async (mode) => {
      const { row, warnings } = await measured(mode);
      // Keys first called after the crash were acknowledged: the ledger reconnected to the promoted standby.
      expect(row.acknowledged).toBeGreaterThan(row.acknowledgedBeforeCrash);
      expect(row).toMatchObject({ duplicates: 0, lost: 0 });
      expect(row.notes.untyped ?? 0).toBe(0);
      expect(Number.isFinite(row.recoverySeconds)).toBe(true);
      expect(warnings).toEqual([]);
    },
    120_000,
  );

  it('asynchronous, 200 ms replication delay: the window is measured, and the start warned of it once', async () => {
    const { row, warnings } = await measured({
      name: 'asynchronous, 200 ms replication delay',
      synchronous: false,
      replicationDelayMs: 200,
    });
    expect(row.acknowledged).toBeGreaterThan(row.acknowledgedBeforeCrash);
    expect(row.notes.untyped ?? 0).toBe(0);
    // The load's ledger started on the primary with its asynchronous standby; the retry pass's, on the promoted
    // standby, which has none.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/asynchronous/);
    expect(warnings[0]).toMatch(/synchronous_standby_names/);
  }, 120_000);
});
