// One process of the fleet bench (bench/fleet.mjs): one side, first executions only, started on "GO" from stdin
// so that every process of a point starts together. Prints one JSON line: calls, milliseconds and the process's
// CPU microseconds (user + system) over the measured calls.
// Args: side (ledger | hand), url, schema, calls, concurrency, tag, preparedStatements (true | false; for the
// hand-written side 'named' sends named statements, anything else plain unnamed ones).
import { handWritten, toolLedger } from './baselines.mjs';
import { throughput } from './postgres.mjs';

const [side, url, schema, calls, concurrency, tag, prepared] = process.argv.slice(2);
const n = Number(calls);
const c = Number(concurrency);
const made =
  side === 'ledger'
    ? await toolLedger(url, schema, { poolSize: c, preparedStatements: prepared !== 'false' })
    : await handWritten(url, schema, { concurrency: c, named: prepared === 'named' });
// Keys of this process only: `tag` tells the processes of one point apart.
const first = (i) => made.first(tag, i);
// A short warm-up (connections, plans), outside the figure.
await throughput(Math.min(200, n), c, (i) => made.first(`${tag}w`, i));
process.stdout.write('READY\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
const started = performance.now();
const cpu = process.cpuUsage();
await throughput(n, c, first);
const ms = performance.now() - started;
const { user, system } = process.cpuUsage(cpu);
await made.close();
process.stdout.write(`${JSON.stringify({ calls: n, ms, cpuUs: user + system })}\n`);
process.exit(0);
