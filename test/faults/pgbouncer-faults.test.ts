import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BOUNCER_SCENARIOS,
  type BouncerEnvironment,
  startBouncerEnvironment,
} from './support/bouncer-scenarios.js';
import { skipWithoutPgbouncer } from './support/pgbouncer.js';
import { type FaultServer, startFaultServer } from './support/postgres-server.js';

// faults.test.ts's scenarios through a real PgBouncer in transaction mode, with the ledger's default options.
describe.skipIf(skipWithoutPgbouncer())('the ledger under database faults, through PgBouncer', () => {
  let server: FaultServer;
  let env: BouncerEnvironment;
  beforeAll(async () => {
    server = await startFaultServer();
    env = await startBouncerEnvironment(server);
  });
  afterAll(async () => {
    await env?.close();
    await server?.destroy();
  });

  it.each(BOUNCER_SCENARIOS.map((s) => [s.name, s] as const))(
    '%s: one execution per key, no wrong success, every call settled in its bound, only typed errors, no crash',
    async (_name, scenario) => {
      const row = await scenario.run({ server, proxy: env.proxy });
      expect(row.keys).toBeGreaterThan(0);
      expect(row, JSON.stringify(row.notes)).toMatchObject({
        duplicates: 0,
        wrongSuccess: 0,
        unsettled: 0,
        untyped: 0,
        crashes: 0,
        unfinished: 0,
      });
      expect(row.executions).toBe(row.keys);
      expect(Number.isFinite(row.recoverySeconds)).toBe(true);
    },
    120_000,
  );
});
