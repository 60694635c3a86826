// `npm run stack`: the operations stack without Docker, for a look. Starts the natively built programs
// (scripts/stack/build.sh) and Debian's prometheus with the shipped configs, all on 127.0.0.1, the way
// `npm run test:stack` does but on fixed ports, and keeps them running until Ctrl-C.
import { describeStack, missingPrograms, startStack } from '../../test/ops/support/stack.js';

const missing = missingPrograms();
if (missing.length > 0) {
  console.error(
    `missing: ${missing.join(', ')}\nrun \`bash scripts/stack/build.sh\` and install Debian's prometheus`,
  );
  process.exit(1);
}
const stack = await startStack(15, {
  collectorGrpc: 4317,
  collectorHttp: 4318,
  collectorMetrics: 8889,
  collectorHealth: 13133,
  collectorSelf: 8888,
  // Jaeger's own OTLP receivers must not take the collector's ports when both run on one host.
  jaegerGrpc: 14317,
  jaegerHttp: 14318,
  jaegerQuery: 16686,
  jaegerQueryGrpc: 16685,
  jaegerHealth: 13134,
  jaegerSelf: 8887,
  prometheus: 9090,
  victoriaLogs: 9428,
});
// Every address printed is probed first: Debian's Prometheus 2.42 serves /classic/alerts, not /alerts.
console.log(await describeStack(stack));
await new Promise<void>((resolve) => {
  process.once('SIGINT', resolve);
  process.once('SIGTERM', resolve);
});
await stack.stop();
