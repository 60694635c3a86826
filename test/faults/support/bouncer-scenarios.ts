import type { FaultRow } from './load.js';
import { type Bouncer, startPgbouncer } from './pgbouncer.js';
import type { FaultServer } from './postgres-server.js';
import { type FaultProxy, startProxy } from './proxy.js';
import { type FaultEnvironment, SCENARIOS, type Scenario } from './scenarios.js';

/**
 * The fault scenarios again with a real PgBouncer (transaction mode) between the ledger and Postgres: the ledger
 * connects to the proxy, the proxy to PgBouncer, PgBouncer to the server. Server faults (restart, stop, terminated
 * backends, a locked table) hit PgBouncer's server connections; network faults hit the ledger's connections to
 * PgBouncer. The ledger runs with default options, so it finds the pooler itself.
 */
export interface BouncerEnvironment {
  readonly bouncer: Bouncer;
  readonly proxy: FaultProxy;
  close(): Promise<void>;
}

export async function startBouncerEnvironment(server: FaultServer): Promise<BouncerEnvironment> {
  const bouncer = await startPgbouncer(server.port);
  const proxy = await startProxy(bouncer.port);
  return {
    bouncer,
    proxy,
    async close() {
      await proxy.close();
      await bouncer.stop();
    },
  };
}

export const BOUNCER_SCENARIOS: readonly Scenario[] = SCENARIOS.map((scenario) => ({
  name: `pgbouncer: ${scenario.name}`,
  async run(env: FaultEnvironment): Promise<FaultRow> {
    // The kill -9 scenario's workers connect to `server.url`: through PgBouncer here. Its SQL stays direct.
    const bouncerUrl = env.proxy.url();
    const server: FaultServer = { ...env.server, url: bouncerUrl };
    const row = await scenario.run({ server, proxy: env.proxy });
    return { ...row, scenario: `pgbouncer: ${row.scenario}` };
  },
}));
