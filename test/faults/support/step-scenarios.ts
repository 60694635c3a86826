import type { FaultEnvironment, Scenario } from './scenarios.js';
import { type DeadNetworkPlan, runDeadNetwork, runStepKills } from './step-faults.js';

// A network dead for longer than the lease and than queryTimeoutSeconds: statements on dead sockets fail during
// the fault, and leases lapse under handlers that acted.
const LONGER_THAN_QUERY_TIMEOUT = { leaseSeconds: 2, queryTimeoutSeconds: 3, faultSeconds: 5 } as const;
// The issue's own report: queryTimeoutSeconds longer than the fault, which is longer than the lease, so a finished
// handler's completion stays stuck on its dead socket after the network is back, while its lease lapses.
const SHORTER_THAN_QUERY_TIMEOUT = { leaseSeconds: 2, queryTimeoutSeconds: 6, faultSeconds: 4 } as const;

export const DEAD_NETWORK_PLANS: readonly DeadNetworkPlan[] = [
  { name: 'dead network 5 s, 1 proc', processes: 1, ...LONGER_THAN_QUERY_TIMEOUT },
  { name: 'dead network 5 s, 2 proc', processes: 2, ...LONGER_THAN_QUERY_TIMEOUT },
  { name: 'dead network 4 s, Q 6 s', processes: 1, ...SHORTER_THAN_QUERY_TIMEOUT },
];

/**
 * Issue 22's scenarios: side effects outside the database (a loopback provider) exactly once under kill -9 at
 * every step phase and under a silently dead network longer than the lease, in one process and across two.
 * Kept apart from SCENARIOS so the database-fault rows stay as they are; `npm run faults` runs both lists.
 */
export const STEP_SCENARIOS: readonly Scenario[] = [
  { name: 'kill -9 inside steps', run: ({ server }) => runStepKills(server) },
  ...DEAD_NETWORK_PLANS.map((plan) => ({
    name: plan.name,
    run: ({ server, proxy }: FaultEnvironment) => runDeadNetwork(server, proxy, plan),
  })),
];
