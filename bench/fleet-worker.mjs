// One process of the fleet bench (bench/fleet.mjs): one side, first executions only, started on "GO" from stdin
// so that every process of a point starts together. Prints one JSON line: calls, warm-up calls, milliseconds and the
// process's CPU microseconds (user + system) over the measured calls.
// Args: side (ledger | hand | ledger-sdk | hand-otel | hand-content), url, schema, calls, concurrency, tag, preparedStatements (true | false; for the
// hand-written side 'named' sends named statements, anything else plain unnamed ones).
// Env: BENCH_LEDGER_OPTIONS, JSON merged into tool-ledger's createLedger options (for example
// '{"replayCacheEntries":0}'); the JSON line also carries `gc`, where the measured calls' garbage collection went
// (bench/support/gc-account.mjs); BENCH_GC=1 writes to stderr the garbage collector's pauses over the measured calls
// (count, and wall µs per call by kind, from `gc` performance entries).
import { readFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import { handWritten, toolLedger } from './baselines.mjs';
import { throughput } from './postgres.mjs';
import { startGcAccount } from './support/gc-account.mjs';

const [side, url, schema, calls, concurrency, tag, prepared] = process.argv.slice(2);
const n = Number(calls);
const c = Number(concurrency);
// The two sides with the real SDK (bench/sustained.mjs): a production-like SDK exporting to the OTLP sink at
// BENCH_OTLP_URL, tool-ledger's own telemetry against a hand-written span, log record and counter per call.
// 'hand-content' is the hand-written code emitting tool-ledger's own telemetry content (bench/sdk.mjs), which
// prices that content on this SDK apart from tool-ledger's implementation of it.
const withSdk = side === 'ledger-sdk' || side === 'hand-otel' || side === 'hand-content';
const sdkModule = withSdk ? await import('./sdk.mjs') : undefined;
const sdk = sdkModule?.createSdk(process.env.BENCH_OTLP_URL);
sdk?.register();
const made = side.startsWith('ledger')
  ? await toolLedger(url, schema, {
      poolSize: c,
      preparedStatements: prepared !== 'false',
      // Without the SDK, tool-ledger's defaults: telemetry on, nothing registered, as a user without an SDK runs it.
      telemetry: withSdk ? { keyHashSecret: 'bench-key-hash-secret' } : {},
      ...JSON.parse(process.env.BENCH_LEDGER_OPTIONS ?? '{}'),
    })
  : await handWritten(url, schema, {
      concurrency: c,
      named: prepared === 'named',
      ...(side === 'hand-otel' ? { instrument: sdkModule.handInstrumentation() } : {}),
      ...(side === 'hand-content'
        ? { instrument: sdkModule.handContentInstrumentation('bench-key-hash-secret') }
        : {}),
    });
// Keys of this process only: `tag` tells the processes of one point apart.
const first = (i) => made.first(tag, i);
// A warm-up outside the figure: connections, plans, and V8's optimising tiers. A process's compiles cost tool-ledger
// more than the hand-written code (more code to optimise): after 200 warm-up calls the next 1,000 cost it
// 100-180 µs of CPU per call more than the hand-written side, after 5,000 50-90, and a fleet point that splits
// 8,000 calls among 8 processes measured mostly warm-up. A deployment's processes run long past it.
// BENCH_FLEET_WARMUP_CALLS sets it.
const warmup = Number(process.env.BENCH_FLEET_WARMUP_CALLS ?? 5000);
const warmupCalls = Math.min(warmup, n);
await throughput(warmupCalls, c, (i) => made.first(`${tag}w`, i));
process.stdout.write('READY\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
// Kinds as node:perf_hooks numbers them: 1 minor (scavenge), 2 major, 4 incremental marking, 8 weak callbacks.
const pauses = { count: 0, ms: 0, byKind: {} };
const gcObserver =
  process.env.BENCH_GC === '1'
    ? new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          pauses.count++;
          pauses.ms += entry.duration;
          pauses.byKind[entry.detail.kind] = (pauses.byKind[entry.detail.kind] ?? 0) + entry.duration;
        }
      })
    : undefined;
gcObserver?.observe({ entryTypes: ['gc'] });
/** Read and write system calls so far (Linux's /proc/self/io), and context switches. */
const kernelCounts = () => {
  const io = Object.fromEntries(
    readFileSync('/proc/self/io', 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(': '))
      .map(([k, v]) => [k, Number(v)]),
  );
  const usage = process.resourceUsage();
  return {
    syscalls: io.syscr + io.syscw,
    voluntary: usage.voluntaryContextSwitches,
    involuntary: usage.involuntaryContextSwitches,
  };
};
const gcAccount = startGcAccount();
const kernelBefore = kernelCounts();
const started = performance.now();
const cpu = process.cpuUsage();
await throughput(n, c, first);
const ms = performance.now() - started;
const { user, system } = process.cpuUsage(cpu);
const kernelAfter = kernelCounts();
const kernel = Object.fromEntries(
  Object.entries(kernelAfter).map(([k, v]) => [k, (v - kernelBefore[k]) / n]),
);
const gc = gcAccount.stop(n);
if (gcObserver) {
  gcObserver.disconnect();
  const perCall = (ms) => ((ms * 1000) / n).toFixed(1);
  const kinds = Object.entries(pauses.byKind).map(([kind, ms]) => `kind ${kind} ${perCall(ms)}`);
  process.stderr.write(
    `GC ${side}: ${pauses.count} pauses over ${n} calls, ${perCall(pauses.ms)} µs of wall time per call (${kinds.join(', ')})\n`,
  );
}
await made.close();
// Exported outside the figure; the counts show whether a batch processor dropped anything under the load.
await sdk?.flush();
await sdk?.shutdown();
const exported = sdk ? { exported: sdk.exported } : {};
process.stdout.write(
  `${JSON.stringify({ calls: n, warmupCalls, ms, cpuUs: user + system, kernel, gc, ...exported })}\n`,
);
process.exit(0);
