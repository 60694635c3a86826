// `npm run faults`: runs every fault scenario on a Postgres of its own and prints one row per scenario.
// `--runs N` repeats the whole set; the exit code is 1 when any row breaks the promise.
import { parseArgs } from 'node:util';
import { BOUNCER_SCENARIOS, startBouncerEnvironment } from './support/bouncer-scenarios.js';
import { type FailoverMode, runFailover } from './support/failover.js';
import type { FaultRow } from './support/load.js';
import { PGBOUNCER_MISSING, pgbouncerBinary } from './support/pgbouncer.js';
import { startFaultServer } from './support/postgres-server.js';
import { startProxy } from './support/proxy.js';
import { SCENARIOS } from './support/scenarios.js';
import { STEP_SCENARIOS } from './support/step-scenarios.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '1' }, only: { type: 'string' } },
});
const runs = Math.max(1, Math.min(10, Number(values.runs) || 1));

const COLUMNS = [
  ['scenario', 37],
  ['keys', 5],
  ['calls', 6],
  ['executions', 10],
  ['duplicates', 10],
  ['unsettled', 9],
  ['untyped', 7],
  ['crashes', 7],
  ['wrongSuccess', 12],
  ['unfinished', 10],
  ['recoverySeconds', 15],
] as const;

export function broken(row: FaultRow): boolean {
  if ((row.wrongAnswers ?? 0) > 0) return true;
  return row.duplicates + row.unsettled + row.untyped + row.crashes + row.wrongSuccess + row.unfinished > 0;
}

function format(row: FaultRow): string {
  return COLUMNS.map(([name, width]) => {
    const value = row[name];
    const text = typeof value === 'number' && name === 'recoverySeconds' ? value.toFixed(2) : String(value);
    return name === 'scenario' ? text.padEnd(width) : text.padStart(width);
  }).join(' ');
}

const server = await startFaultServer();
const proxy = await startProxy(server.port);
// The same scenarios through a real PgBouncer in transaction mode (rows named "pgbouncer: ..."), when installed.
const bouncer = pgbouncerBinary() === undefined ? undefined : await startBouncerEnvironment(server);
if (!bouncer) {
  if (process.env.CI === 'true') throw new Error(PGBOUNCER_MISSING);
  process.stdout.write(`pgbouncer rows skipped: ${PGBOUNCER_MISSING}\n`);
}
const sets = [
  { scenarios: [...SCENARIOS, ...STEP_SCENARIOS], proxy },
  ...(bouncer ? [{ scenarios: BOUNCER_SCENARIOS, proxy: bouncer.proxy }] : []),
];
let failed = false;
try {
  for (let run = 1; run <= runs; run++) {
    process.stdout.write(`\nrun ${run} of ${runs} (bound per call in seconds shown as 'bound')\n`);
    process.stdout.write(
      `${COLUMNS.map(([n, w]) => (n === 'scenario' ? n.padEnd(w) : n.padStart(w))).join(' ')}  bound\n`,
    );
    for (const set of sets)
      for (const scenario of set.scenarios) {
        if (values.only && !scenario.name.includes(values.only)) continue;
        const row = await scenario.run({ server, proxy: set.proxy });
        failed ||= broken(row);
        process.stdout.write(`${format(row)}  ${row.boundSeconds.toFixed(1)}\n`);
        const notes = Object.entries(row.notes).map(([k, v]) => `${k}=${v}`);
        if (row.wrongAnswers) notes.unshift(`wrongAnswers=${row.wrongAnswers}`);
        if (notes.length > 0) process.stdout.write(`    ${notes.join(', ')}\n`);
        // Step scenarios name each broken promise by key: the first few say what went wrong.
        for (const problem of ((row as { problems?: readonly string[] }).problems ?? []).slice(0, 8)) {
          process.stdout.write(`    ! ${problem}\n`);
        }
      }
  }
} finally {
  await bouncer?.close();
  await proxy.close();
  await server.destroy();
}
// Failover: a primary and a streaming standby of their own per row; the primary crashes under load and the standby
// is promoted. The ledger reaches the read-write node through a multi-host URL that lists the standby first. Synchronous rows must show 0 duplicates and 0 lost results; the asynchronous rows measure the window.
const FAILOVERS: readonly FailoverMode[] = [
  { name: 'sync, synchronous_commit=on', synchronous: true, commit: 'on' },
  { name: 'sync, remote_apply', synchronous: true, commit: 'remote_apply' },
  { name: 'sync, on, 200 ms link', synchronous: true, commit: 'on', replicationDelayMs: 200 },
  { name: 'async, loopback', synchronous: false },
  { name: 'async, 200 ms link', synchronous: false, replicationDelayMs: 200 },
];
if (!values.only || 'failover'.includes(values.only)) {
  for (let run = 1; run <= runs; run++) {
    process.stdout.write(`\nfailover, run ${run} of ${runs}\n`);
    process.stdout.write(
      `${'failover'.padEnd(30)} ${['keys', 'acked', 'preCrash', 'duplicates', 'lost', 'windowMs', 'recoverySeconds', 'promotion', 'behindB'].map((c) => c.padStart(10)).join(' ')}\n`,
    );
    for (const mode of FAILOVERS) {
      const row = await runFailover(mode);
      if (mode.synchronous && row.duplicates + row.lost > 0) failed = true;
      const cells = [
        row.keys,
        row.acknowledged,
        row.acknowledgedBeforeCrash,
        row.duplicates,
        row.lost,
        row.lostWindowMs,
        row.recoverySeconds.toFixed(2),
        row.promotionSeconds.toFixed(2),
        row.standbyBehindBytes,
      ];
      process.stdout.write(`${mode.name.padEnd(30)} ${cells.map((c) => String(c).padStart(10)).join(' ')}\n`);
    }
  }
}
process.exitCode = failed ? 1 : 0;
