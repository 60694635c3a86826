// Scrubbing cost and the corpora's precision/recall, from the built package (npm run build first).
// Prints medians of interleaved runs; no thresholds: the figures go in docs/telemetry.md.
import { readFileSync } from 'node:fs';
import { createRedactor } from '../dist/telemetry/redact/default-redactor.js';

const capped = createRedactor();
const uncapped = createRedactor({ maxTextLength: Number.POSITIVE_INFINITY });
const prose = 'Refund failed for lena.okafor@example.com: card 4111 1111 1111 1111, call +44 20 7946 0958. ';
const shapes = {
  prose: (n) => prose.repeat(Math.ceil(n / prose.length)).slice(0, n),
  'digit run': (n) => '1'.repeat(n),
  'spaced digits': (n) => '1 '.repeat(Math.ceil(n / 2)).slice(0, n),
  'letter run': (n) => 'k'.repeat(n),
};
const sizes = [
  ['100 B', 100],
  ['1 KB', 1024],
  ['64 KB', 65536],
  ['1 MB', 1048576],
];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function time(redactor, text, rounds) {
  const samples = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    redactor.redactText(text);
    samples.push(performance.now() - started);
  }
  return median(samples);
}

console.log('scrubbing one string (median ms; default cap 4096 vs no cap, to show the growth is linear)');
for (const [shape, make] of Object.entries(shapes)) {
  for (const [label, n] of sizes) {
    const text = make(n);
    const rounds = n > 100_000 ? 3 : 15;
    const a = time(capped, text, rounds);
    const b = time(uncapped, text, rounds);
    console.log(
      `  ${shape.padEnd(14)} ${label.padStart(6)}  capped ${a.toFixed(3).padStart(8)}  uncapped ${b.toFixed(3).padStart(9)}  (${((b / n) * 1024 * 1000).toFixed(1)} µs/KB)`,
    );
  }
}

const ids = JSON.parse(
  readFileSync(new URL('../test/corpus/identifiers.json', import.meta.url), 'utf8'),
).identifiers;
const pii = JSON.parse(readFileSync(new URL('../test/corpus/personal-data.json', import.meta.url), 'utf8'));
let altered = 0;
for (const { value } of ids) {
  for (const text of [value, `id ${value} not found`]) if (capped.redactText(text) !== text) altered++;
}
const labels = pii.labelled_categories ?? {};
let leaked = 0;
let tried = 0;
for (const { category, value } of pii.values) {
  const label = labels[category];
  const texts = label
    ? [`${label} ${value}`, `${label}: ${value}`]
    : [value, `Refund failed (${value}); retry later`];
  for (const text of texts) {
    tried++;
    if (capped.redactText(text).toLowerCase().includes(value.toLowerCase())) leaked++;
  }
}
for (const text of pii.free_text_examples) {
  tried++;
  const out = capped.redactText(text).toLowerCase();
  if (pii.values.some(({ value }) => out.includes(value.toLowerCase()))) leaked++;
}
console.log(`precision: ${altered} of ${ids.length * 2} identifier texts altered (${ids.length} formats)`);
console.log(
  `recall: ${leaked} of ${tried} personal-data texts leaked (${pii.values.length} values); per exported signal see test/db/telemetry/otlp-pii.test.ts`,
);
