import type { Scenario } from './scenarios.js';
import { runDeadNetwork, runStepKills } from './step-faults.js';

/**
 * Issue 22's scenarios: side effects outside the database (a loopback provider) exactly once under kill -9 at
 * every step phase and under a silently dead network longer than the lease, in one process and across two.
 * Kept apart from SCENARIOS so the database-fault rows stay as they are; `npm run faults` runs both lists.
 */
export const DEAD_NETWORK = { leaseSeconds: 2, queryTimeoutSeconds: 3, faultSeconds: 5 } as const;

export const STEP_SCENARIOS: readonly Scenario[] = [
  { name: 'kill -9 inside steps', run: ({ server }) => runStepKills(server) },
  {
    name: `dead network ${DEAD_NETWORK.faultSeconds} s, 1 proc`,
    run: ({ server, proxy }) => runDeadNetwork(server, proxy, { ...DEAD_NETWORK, processes: 1 }),
  },
  {
    name: `dead network ${DEAD_NETWORK.faultSeconds} s, 2 proc`,
    run: ({ server, proxy }) => runDeadNetwork(server, proxy, { ...DEAD_NETWORK, processes: 2 }),
  },
];
