// How soon a duplicate that waits on a run in flight gets its result once the run finishes.
import { createLedger } from '../dist/index.js';

export async function wakeupLatency(url, schema, trials) {
  const ledger = await createLedger({ connectionString: url, schema, telemetry: false });
  let release;
  let started;
  const tool = ledger.tool({
    name: 'slow_invoice',
    kind: 'mutation',
    waitSeconds: 10,
    handler: async () => {
      started();
      await new Promise((resolve) => {
        release = resolve;
      });
      return { ok: true };
    },
  });
  const latencies = [];
  try {
    for (let t = 0; t < trials; t++) {
      const running = new Promise((resolve) => {
        started = resolve;
      });
      const first = tool.call({ n: t }, { key: `wake_${t}` });
      await running;
      const duplicate = tool.call({ n: t }, { key: `wake_${t}` });
      // Long enough that the duplicate has found the run in flight and gone to sleep, at a varying point of its
      // backoff so polling alone could not look good.
      await new Promise((resolve) => setTimeout(resolve, 30 + ((t * 37) % 120)));
      const releasedAt = performance.now();
      release();
      await duplicate;
      latencies.push(performance.now() - releasedAt);
      await first;
    }
  } finally {
    await ledger.close();
  }
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { count: sorted.length, p50: at(0.5), p90: at(0.9), max: sorted.at(-1) };
}
