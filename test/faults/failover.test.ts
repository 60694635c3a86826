import { describe, expect, it } from 'vitest';
import { ASYNC_STANDBY_WARNING_CODE } from '../../src/ledger/replication.js';
import { type FailoverMode, type FailoverRow, runFailover } from './support/failover.js';
import { POSTGRES_MISSING, postgresBin } from './support/replication.js';

// A primary and a streaming standby of this file's own on loopback; under load the primary crashes
// (pg_ctl stop -m immediate) and the standby is promoted. The ledger reaches the read-write node through
// readWriteClient (pg has no target_session_attrs). docs/operations.md ("Failover") quotes these rows.
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
  ] satisfies FailoverMode[])(
    '$name: no key runs twice and no acknowledged result is lost',
    async (mode) => {
      const { row, warnings } = await measured(mode);
      expect(row.acknowledged).toBeGreaterThan(0);
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
    expect(row.acknowledged).toBeGreaterThan(0);
    expect(row.notes.untyped ?? 0).toBe(0);
    // The load's ledger started on the primary with its asynchronous standby; the retry pass's, on the promoted
    // standby, which has none.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/asynchronous/);
    expect(warnings[0]).toMatch(/synchronous_standby_names/);
  }, 120_000);
});
