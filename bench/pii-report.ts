// The per-signal precision/recall report of issue 11 (npm run report:pii, and the last step of npm run bench):
// every personal-data value and every identifier of the in-repo corpora through real ledger calls with the real
// SDK and in-memory exporters, content capture off and on; then the scrubbing speed by input size. Prints
// figures only, no thresholds: test/db/telemetry/pii-report.test.ts asserts 0 leaked / 0 altered on a sample.
import { createRedactor } from '../src/telemetry/redact/default-redactor.js';
import { corpus, identifiers } from '../test/support/pii-corpus.js';
import { type HarnessResult, runPiiHarness, SIGNALS } from '../test/support/pii-harness.js';

const started = performance.now();
const runs: [string, HarnessResult][] = [];
for (const captureContent of [false, true]) {
  runs.push([
    captureContent ? 'capture on' : 'capture off',
    await runPiiHarness({ values: corpus.values, identifiers, captureContent }),
  ]);
}
const [off, on] = runs.map(([, r]) => r) as [HarnessResult, HarnessResult];
console.log(
  `personal data and identifiers through real ledger calls (${corpus.values.length} values and ${off.checked - corpus.values.length} JWTs/bearer tokens made from them, ${identifiers.length} identifiers; ${off.calls + on.calls} calls in ${((performance.now() - started) / 1000).toFixed(1)} s)`,
);
const cell = (n: number | string, width: number) => String(n).padStart(width);
console.log(
  `  ${'signal'.padEnd(18)}${cell('leaked, capture off', 21)}${cell('leaked, capture on', 20)}${cell('ids altered, off', 18)}${cell('ids altered, on', 17)}`,
);
for (const signal of SIGNALS) {
  const altered = (r: HarnessResult) =>
    r.signals[signal].altered === undefined
      ? 'n/a'
      : `${r.signals[signal].altered?.length} of ${r.identifiers}`;
  console.log(
    `  ${signal.padEnd(18)}${cell(off.signals[signal].leaked.length, 21)}${cell(on.signals[signal].leaked.length, 20)}${cell(altered(off), 18)}${cell(altered(on), 17)}`,
  );
}
for (const [mode, result] of runs) {
  for (const signal of SIGNALS) {
    const { where, altered } = result.signals[signal];
    for (const line of where.slice(0, 5)) console.log(`  leaked in ${signal}, ${mode}: ${line}`);
    if (altered && altered.length > 0)
      console.log(`  altered in ${signal}, ${mode}: ${altered.slice(0, 10).join(' | ')}`);
  }
}

// Speed: the default cap (4096) bounds every string; uncapped shows the cost grows linearly with the input.
const capped = createRedactor();
const uncapped = createRedactor({ maxTextLength: Number.POSITIVE_INFINITY });
const prose = 'Refund failed for lena.okafor@example.com: card 4111 1111 1111 1111, call +44 20 7946 0958. ';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
console.log('scrubbing speed, prose with an email, a card and a phone (median ms per string)');
console.log(
  `  ${'input'.padEnd(8)}${cell('capped', 10)}${cell('uncapped', 11)}${cell('uncapped µs/KB', 16)}`,
);
for (const [label, n] of [
  ['100 B', 100],
  ['1 KB', 1024],
  ['64 KB', 65_536],
  ['1 MB', 1_048_576],
] as const) {
  const text = prose.repeat(Math.ceil(n / prose.length)).slice(0, n);
  const rounds = n > 100_000 ? 3 : 11;
  const a: number[] = [];
  const b: number[] = [];
  // Interleaved, so a busy neighbour slows both columns alike
  for (let i = 0; i < rounds; i++) {
    let t = performance.now();
    capped.redactText(text);
    a.push(performance.now() - t);
    t = performance.now();
    uncapped.redactText(text);
    b.push(performance.now() - t);
  }
  const perKb = (median(b) / n) * 1024 * 1000;
  console.log(
    `  ${label.padEnd(8)}${cell(median(a).toFixed(3), 10)}${cell(median(b).toFixed(3), 11)}${cell(perKb.toFixed(0), 16)}`,
  );
}
