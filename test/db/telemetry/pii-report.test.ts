import { describe, expect, it } from 'vitest';
import { corpus, identifiers, labelOf } from '../../support/pii-corpus.js';
import { runPiiHarness, SIGNALS } from '../../support/pii-harness.js';

/**
 * The harness of `npm run report:pii` (bench/pii-report.ts), on a sample so the suite stays short: every
 * labelled-only value, the first of every other category and every twentieth value after that, and every eighth
 * identifier. The report runs every value; both must show 0 leaked and 0 altered on every signal.
 */
const seen = new Set<string>();
const values = corpus.values.filter(({ category }, i) => {
  const first = !seen.has(category);
  seen.add(category);
  return first || labelOf(category) !== undefined || i % 20 === 0;
});
const sampledIdentifiers = identifiers.filter((_, i) => i % 8 === 0);

describe.each([false, true])(
  'personal data per signal, captureContent %s (report harness)',
  (captureContent) => {
    let result: Awaited<ReturnType<typeof runPiiHarness>>;

    it('runs every sampled value and identifier through real ledger calls', async () => {
      result = await runPiiHarness({ values, identifiers: sampledIdentifiers, captureContent });
      expect(result.calls).toBeGreaterThan(values.length * 9);
    }, 300_000);

    it.each(SIGNALS)('%s: nothing leaked and no identifier altered', (signal) => {
      expect(result.signals[signal].leaked).toEqual([]);
      expect(result.signals[signal].altered ?? []).toEqual([]);
    });
  },
);
