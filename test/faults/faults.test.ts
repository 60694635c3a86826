import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultServer, startFaultServer } from './support/postgres-server.js';
import { type FaultProxy, startProxy } from './support/proxy.js';
import { SCENARIOS } from './support/scenarios.js';

// Each scenario runs a few seconds of load against a Postgres this file starts (never the shared one), through
// a loopback proxy, with one fault in the middle. `npm run faults` prints the same rows as a report.
let server: FaultServer;
let proxy: FaultProxy;
beforeAll(async () => {
  server = await startFaultServer();
  proxy = await startProxy(server.port);
});
afterAll(async () => {
  await proxy?.close();
  await server?.destroy();
});

describe('the ledger under database faults', () => {
  it.each(SCENARIOS.map((s) => [s.name, s] as const))(
    '%s: one execution per key, no wrong success, every call settled in its bound, only typed errors, no crash',
    async (_name, scenario) => {
      const row = await scenario.run({ server, proxy });
      expect(row.keys).toBeGreaterThan(0);
      expect(row, JSON.stringify(row.notes)).toMatchObject({
        duplicates: 0,
        wrongSuccess: 0,
        unsettled: 0,
        untyped: 0,
        crashes: 0,
        unfinished: 0,
      });
      // Every key ran exactly once: executions equal keys.
      expect(row.executions).toBe(row.keys);
      expect(Number.isFinite(row.recoverySeconds)).toBe(true);
      if (row.scenario === 'pool exhaustion') {
        // A full pool never cost a healthy handler its lease: no handler ran twice and none lost its lease.
        expect(row.notes.handler_starts).toBe(row.keys);
        expect(row.notes.LEASE_LOST ?? 0).toBe(0);
      }
    },
    120_000,
  );
});
