import pg from 'pg';
import { type FaultRow, type LoadPlan, runLoad } from './load.js';
import type { FaultServer } from './postgres-server.js';
import type { FaultProxy } from './proxy.js';
import { runKillWorker } from './workers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface FaultEnvironment {
  readonly server: FaultServer;
  readonly proxy: FaultProxy;
}

export interface Scenario {
  readonly name: string;
  run(env: FaultEnvironment): Promise<FaultRow>;
}

/** A scenario of load through the proxy, with the fault `plan` describes. */
const load = (
  name: string,
  plan: (env: FaultEnvironment) => Omit<LoadPlan, 'name' | 'server' | 'url'>,
): Scenario => ({
  name,
  run: (env) => runLoad({ name, server: env.server, url: env.proxy.url(), ...plan(env) }),
});

/** Every fault the issue lists, each bounded in time (a few seconds of load around one fault). */
export const SCENARIOS: readonly Scenario[] = [
  load('restart under load', ({ server }) => ({ fault: () => server.restart('fast') })),
  load('stop 2 s, start', ({ server }) => ({
    async fault() {
      await server.stop('immediate');
      await sleep(2000);
      await server.start();
    },
  })),
  load('terminate all backends', ({ server }) => ({
    // Three callers per key keep duplicates waiting, so the LISTEN connection is in use when it dies.
    callersPerKey: 3,
    async fault() {
      await server.terminateAll();
      await sleep(300);
      await server.terminateAll();
    },
  })),
  load('connection reset', ({ proxy }) => ({
    async fault() {
      proxy.resetAll();
      await sleep(400);
      proxy.resetAll();
    },
  })),
  load('black hole 3 s', ({ proxy }) => ({
    async fault() {
      proxy.mode = 'blackhole';
      await sleep(3000);
      proxy.mode = 'pass';
    },
  })),
  load('delay 300 ms for 3 s', ({ proxy }) => ({
    async fault() {
      proxy.delayMs = 300;
      proxy.mode = 'delay';
      await sleep(3000);
      proxy.mode = 'pass';
    },
  })),
  load('statement_timeout', ({ server }) => ({
    // The table is locked for longer than statementTimeoutSeconds, so ledger statements are cancelled.
    async fault({ schema }) {
      const locker = new pg.Client({ connectionString: server.url, application_name: 'fault-admin' });
      locker.on('error', () => {});
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query(`LOCK TABLE "${schema}".tool_runs IN ACCESS EXCLUSIVE MODE`);
        await sleep(2500);
        await locker.query('COMMIT');
      } finally {
        await locker.end();
      }
    },
  })),
  load('pool exhaustion', () => ({
    // Transactional handlers hold both pool clients for longer than a lease: renewals must not need them.
    options: { poolSize: 2, leaseSeconds: 0.9 },
    handlerMs: 1500,
    transactional: 'all',
    keysPerSecond: 4,
    loadSeconds: 3,
    fault: async () => {},
  })),
  { name: 'kill -9 of a worker', run: ({ server }) => runKillWorker(server) },
];
