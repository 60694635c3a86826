import { describe, expect, it } from 'vitest';
import { createOtelObserver } from '../../../src/telemetry/observer.js';
import { createRedactor } from '../../../src/telemetry/redact/default-redactor.js';
import { dictionariesLoaded } from '../../../src/telemetry/redact/dictionaries.js';

// The word and name lists (about 5 MiB resident) load at the first word a redactor judges, not when it is made:
// a ledger with telemetry on and no SDK registered never scrubs anything, so it never holds them. Each test file
// runs in a fresh module graph, so nothing before this file has loaded them.
describe('the redactor dictionaries', () => {
  it('are not loaded by making an observer or a redactor, and are at the first text with a word to judge', () => {
    createOtelObserver({ keyHashSecret: 'k'.repeat(32) });
    const redactor = createRedactor();
    expect(dictionariesLoaded()).toBe(false);
    expect(redactor.redactText('')).toBe('');
    expect(dictionariesLoaded()).toBe(false);
    const scrubbed = redactor.redactText('Refund for Priya Raman tomorrow');
    expect(dictionariesLoaded()).toBe(true);
    expect(scrubbed).not.toContain('Priya');
  });
});
