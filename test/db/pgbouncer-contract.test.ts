import { afterAll } from 'vitest';
import { PGBOUNCER_MISSING, pgbouncerBinary, startPgbouncer } from '../faults/support/pgbouncer.js';
import { startFaultServer } from '../faults/support/postgres-server.js';

// The ledger contract (contract.test.ts), the cross-process race (processes.test.ts) and approvals (approvals.test.ts,
// approval-processes.test.ts: the state table, the wait for a decision, a kill -9 and a restart) again, with DATABASE_URL
// pointing at a real PgBouncer in transaction mode in front of a Postgres of this file's own, and default options:
// the ledger finds the pooler itself. Without pgbouncer the file skips, except under CI=true.
if (pgbouncerBinary() === undefined && process.env.CI !== 'true') {
  const { describe, it } = await import('vitest');
  describe.skip(`the contract through PgBouncer (${PGBOUNCER_MISSING})`, () => {
    it('skipped', () => {});
  });
  console.warn(`skipped: ${PGBOUNCER_MISSING}`);
} else {
  const server = await startFaultServer();
  const bouncer = await startPgbouncer(server.port);
  const previous = process.env.DATABASE_URL;
  process.env.DATABASE_URL = bouncer.url();
  afterAll(async () => {
    process.env.DATABASE_URL = previous;
    await bouncer.stop();
    await server.destroy();
  });
  await import('./contract.test.js');
  await import('./processes.test.js');
  await import('./approvals.test.js');
  await import('./approval-processes.test.js');
}
