// The Citus lane (`npm run test:citus`): the database suites that matter on a distributed ledger, on a Citus
// cluster of the lane's own (a coordinator and two workers, scripts/citus/cluster.mjs, Citus built once into a cache
// outside the checkout by scripts/citus/build.sh), plus test/citus, which only this lane runs. Every ledger the
// suites open distributes its schema by tenant (TOOL_LEDGER_TEST_DISTRIBUTE=1, read by test/support/db.ts).
//
// Citus is built from ../shared/vendor (beside the checkout). Without it the lane says so in one line and passes;
// under TOOL_LEDGER_REQUIRE_ALL=1 (CI) that is a failure instead. Exits with vitest's status; the npm script
// builds first, because the process suites run the built package.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { citusInstall, startCitusCluster } from './citus/cluster.mjs';
import { root, runLane } from './lane.mjs';

/**
 * The suites of the lane. The rest of test/db and test/ops is left out, each for the reason given: what they test
 * does not change on distributed tables, or cannot apply there.
 */
const SUITES = [
  // The contract on the distributed schema: every outcome, waits, takeovers, fencing, jobs, the purge, TTLs.
  'test/db/contract.test.ts',
  // Several processes racing one key; a kill -9 and the takeover after the lease; a stalled owner fenced off.
  'test/db/processes.test.ts',
  // Recorded steps, unknown outcomes and their rules.
  'test/db/steps.test.ts',
  // The claim's two statements on Citus (find, insert) against one another, and completion times.
  'test/db/claim-path.test.ts',
  // Waiters woken by a notice sent on the coordinator (the completion's runs on a worker).
  'test/db/wakeup.test.ts',
  'test/db/replay-cache.test.ts',
  // Any printable tenant and key, hashed to a shard and stored verbatim.
  'test/db/hostile-input.property.test.ts',
  // The support CLI on distributed tables: inspect, list, stats, forget, resolve, purge, hash-key.
  'test/ops/cli.test.ts',
  'test/ops/cli-resolve.test.ts',
  'test/ops/cli-inspect-ids.test.ts',
  'test/ops/cli-incident.test.ts',
  // The console on distributed tables: search (by key a plain statement there), the run page, the inbox, the
  // overview, hostile values, keyboard use in Chromium, and every refusal.
  'test/console/browser.test.ts',
  'test/console/refusals.test.ts',
  // The explorer's read-only role (postgres/explorer.sql): the console through its view, and the explorer
  // dashboard's panels. Its key_hash_of is PL/pgSQL: Citus cannot plan a SQL function's statement that reads a
  // distributed table with the function's parameter in it.
  'test/console/explorer.test.ts',
  'test/ops/ledger-explorer.test.ts',
];

/** Left out, and why (printed by `--list`, so the choice stays visible). */
export const LEFT_OUT = {
  'test/db/partitioned.test.ts':
    'the partitioned layout, which Citus cannot distribute (refused at distribute time)',
  'test/ops/cli-partitioned.test.ts': 'the partitioned layout, as above',
  'test/db/purge-sweep.test.ts':
    "the table layout's heap sweep by ctid windows; a distributed table is purged shard by shard (test/citus/purge.test.ts)",
  'test/db/tenant-routing.test.ts':
    "the stand-in on Postgres' own hash partitions; test/citus/routing.test.ts plans every statement on Citus itself",
  'test/db/migrations-and-outages.test.ts':
    'migrations from earlier versions on local tables and a flaky pool; test/citus/distribute.test.ts runs a migration through the coordinator and test/citus/worker-lost.test.ts the outage of a worker',
  'test/db/distribute.test.ts':
    'distribution refused on a server without Citus; test/citus/distribute.test.ts here',
  'test/db/approvals.test.ts':
    'approvals, refused with CONFIG_INVALID on a distributed schema (docs/ledger.md, "Approvals": not supported)',
  'test/db/approval-processes.test.ts': 'approvals, as above',
  'test/console/approvals.test.ts': 'the approvals inbox: approvals, as above',
  'test/console/bulk.test.ts': 'bulk decisions, half of them on approvals, as above',
  'test/console/partitioned.test.ts': 'the partitioned layout, as above',
  'test/console/search-plan.test.ts': "plans on one Postgres's indexes; Citus plans per shard",
  'test/db/audit-chain.test.ts':
    'the audit chain, which approvals (refused on a distributed schema), forget and resolve write; it stays a table of the coordinator (test/citus/distribute.test.ts)',
  'test/db/sharp-edges.test.ts': 'PGlite only',
  'test/db/pglite-template.test.ts': 'PGlite only',
  'test/db/multi-host-url.test.ts': 'connection strings, not tables',
  'test/db/pool-checkout.test.ts': 'the pool, not tables',
  'test/db/pgbouncer.test.ts': 'PgBouncer over servers of its own',
  'test/db/pgbouncer-contract.test.ts': 'PgBouncer over servers of its own',
  'test/db/telemetry': 'telemetry, which knows no SQL',
};

const citusSuites = () =>
  readdirSync(join(root, 'test/citus'))
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => join('test/citus', file))
    .sort();

if (process.argv.includes('--list')) {
  for (const file of [...SUITES, ...citusSuites()]) console.log(`runs     ${file}`);
  for (const [file, why] of Object.entries(LEFT_OUT)) console.log(`left out ${file}: ${why}`);
  process.exit(0);
}

const install = citusInstall();
if (install.skipped) {
  const line = `SKIPPED the Citus lane (npm run test:citus): ${install.skipped}`;
  if (process.env.TOOL_LEDGER_REQUIRE_ALL === '1') {
    console.error(`TOOL_LEDGER_REQUIRE_ALL=1, but ${line}`);
    process.exit(1);
  }
  console.error(line);
  process.exit(0);
}
const started = Date.now();
// Four shards (two a worker) instead of Citus's 32: the suites make a distributed schema per test, and each
// shard is a table on a worker to create and drop. Routing and colocation are the same with any count.
const cluster = await startCitusCluster({ install, shardCount: 4 });
console.log(
  `Citus cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s: coordinator ${cluster.url}, workers ${cluster.workers.map((w) => w.port).join(', ')}`,
);
await runLane({
  files: [...SUITES, ...citusSuites()],
  args: process.argv.slice(2),
  env: {
    DATABASE_URL: cluster.url,
    TOOL_LEDGER_TEST_DISTRIBUTE: '1',
    TOOL_LEDGER_CITUS_TEST: '1',
    TOOL_LEDGER_CITUS_INSTALL: install.dir,
  },
  cleanup: () => cluster.destroy(),
});
