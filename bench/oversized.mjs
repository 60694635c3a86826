// Issue 11: what a 1 MB key, tenant, tool call id, error message or input costs a call's telemetry. Each case runs
// interleaved on two ledgers of one in-memory PGlite, with telemetry (a real SDK: batch span and log processors,
// in-memory exporters, content capture on) and without; the median difference is the scrubbing and export cost.
// From the built package (npm run build first). No thresholds: the figures go in docs/telemetry.md.
import { PGlite } from '@electric-sql/pglite';
import { BatchLogRecordProcessor, InMemoryLogRecordExporter, LoggerProvider } from '@opentelemetry/sdk-logs';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { createLedger, ToolFailure } from '../dist/index.js';
import { createOtelObserver } from '../dist/telemetry/observer.js';

const MB = 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_OVERSIZED_ROUNDS ?? 15);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const db = new PGlite();
const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new BatchSpanProcessor(new InMemorySpanExporter())],
});
const loggerProvider = new LoggerProvider({
  processors: [new BatchLogRecordProcessor({ exporter: new InMemoryLogRecordExporter() })],
});

async function tools(telemetry) {
  const ledger = await createLedger({
    pglite: db,
    schema: telemetry ? 'with_telemetry' : 'without',
    telemetry,
  });
  const echo = ledger.tool({ name: 'echo', kind: 'mutation', handler: async (input) => ({ echoed: input }) });
  const explode = ledger.tool({
    name: 'explode',
    kind: 'mutation',
    handler: async () => {
      throw new ToolFailure(`failed for maria.gonzalez@example.com ${'e'.repeat(MB)}`, {
        cause: new Error(`cause ${'c'.repeat(MB)}`),
      });
    },
  });
  return { ledger, echo, explode };
}

const sides = {
  with: await tools({
    tracerProvider,
    loggerProvider,
    captureContent: true,
    keyHashSecret: 'bench-key-hash-secret',
  }),
  without: await tools(false),
};
const big = (c) => c.repeat(MB);
const cases = [
  ['small call (reference)', (t, i) => t.echo.invoke({ n: 1 }, { key: `small-${i}` })],
  ['1 MB key', (t) => t.echo.invoke({ n: 1 }, { key: big('k') })],
  ['1 MB tenant', (t, i) => t.echo.invoke({ n: 2 }, { key: `tenant-${i}`, tenant: big('t') })],
  ['1 MB tool call id', (t, i) => t.echo.invoke({ n: 3 }, { key: `call-id-${i}`, toolCallId: big('c') })],
  ['1 MB input', (t, i) => t.echo.invoke({ text: big('x') }, { key: `input-${i}` })],
  ['1 MB error message + cause', (t, i) => t.explode.invoke({ n: 5 }, { key: `error-${i}` })],
];

async function timed(run) {
  const started = performance.now();
  await run().catch(() => {});
  return performance.now() - started;
}

console.log(
  `oversized caller input: median ms per call over ${ROUNDS} interleaved rounds (in-memory PGlite)`,
);
console.log(
  `  ${'case'.padEnd(28)} ${'telemetry'.padStart(10)} ${'none'.padStart(8)} ${'added'.padStart(8)}`,
);
for (const [name, run] of cases) {
  const on = [];
  const off = [];
  for (let i = 0; i < ROUNDS; i++) {
    // Alternating which side goes first spreads the machine's noise over both.
    const order = i % 2 === 0 ? ['with', 'without'] : ['without', 'with'];
    for (const side of order) (side === 'with' ? on : off).push(await timed(() => run(sides[side], `${i}`)));
  }
  const diffs = on.map((t, i) => t - off[i]);
  console.log(
    `  ${name.padEnd(28)} ${median(on).toFixed(2).padStart(10)} ${median(off).toFixed(2).padStart(8)} ${median(diffs).toFixed(2).padStart(8)}`,
  );
}

// The telemetry work alone, without the database: the observer's span start and decision (scrub, hash, emit).
const observer = createOtelObserver({
  tracerProvider,
  loggerProvider,
  captureContent: true,
  keyHashSecret: 'bench-key-hash-secret',
});
const start = {
  tool: 'echo',
  kind: 'mutation',
  tenant: 'acme',
  key: 'small-1',
  user: undefined,
  toolCallId: 'call_1',
  input: { n: 1 },
};
const failure = new ToolFailure(`failed for maria.gonzalez@example.com ${'e'.repeat(MB)}`, {
  cause: new Error(`cause ${'c'.repeat(MB)}`),
});
const scopes = [
  ['small call (reference)', { ...start }, { outcome: 'executed', result: { ok: true } }],
  ['1 MB key', { ...start, key: big('k') }, { outcome: 'rejected', rejectedReason: 'key_invalid' }],
  ['1 MB tenant', { ...start, tenant: big('t') }, { outcome: 'rejected', rejectedReason: 'context_invalid' }],
  ['1 MB tool call id', { ...start, toolCallId: big('c') }, { outcome: 'executed', result: { ok: true } }],
  [
    '1 MB input',
    { ...start, input: { text: big('x') } },
    { outcome: 'executed', result: { text: big('x') } },
  ],
  ['1 MB error message + cause', { ...start }, { outcome: 'failed', error: failure, toolError: true }],
];
console.log(`telemetry work alone (observer span start + decision), median ms over ${ROUNDS * 2} calls`);
for (const [name, callStart, decision] of scopes) {
  const samples = [];
  // Two warm-up calls per case: the first call loads the names dictionary and compiles the detectors.
  for (let i = -2; i < ROUNDS * 2; i++) {
    const started = performance.now();
    observer
      .startCall({ ...callStart, key: callStart.key === 'small-1' ? `small-${i}` : callStart.key })
      .end(decision);
    if (i >= 0) samples.push(performance.now() - started);
  }
  console.log(`  ${name.padEnd(28)} ${median(samples).toFixed(3).padStart(10)}`);
}

await Promise.all([sides.with.ledger.close(), sides.without.ledger.close()]);
await Promise.all([tracerProvider.shutdown(), loggerProvider.shutdown()]);
await db.close();
