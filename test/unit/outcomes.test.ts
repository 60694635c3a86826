import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/contract/errors.js';
import { OUTCOME_INFO, OUTCOMES, REJECTED_REASONS } from '../../src/contract/outcomes.js';
import { OUTCOME_SEVERITY } from '../../src/telemetry/vocabulary.js';

const doc = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

describe('the outcome list and its views', () => {
  it('gives every outcome its severity from the one table', () => {
    expect(Object.keys(OUTCOME_SEVERITY).sort()).toEqual([...OUTCOMES].sort());
    for (const outcome of OUTCOMES) expect(OUTCOME_SEVERITY[outcome]).toBe(OUTCOME_INFO[outcome].severity);
  });

  it('documents every outcome and rejected reason in the telemetry tables', () => {
    const telemetry = doc('telemetry.md');
    const outcomeRow = telemetry
      .split('\n')
      .find((line) => line.startsWith('| `tool_ledger.idempotency.outcome`'));
    const reasonRow = telemetry
      .split('\n')
      .find((line) => line.startsWith('| `tool_ledger.rejected.reason`'));
    for (const outcome of OUTCOMES) expect(outcomeRow).toContain(`\`${outcome}\``);
    for (const reason of REJECTED_REASONS) expect(reasonRow).toContain(`\`${reason}\``);
  });

  it('documents every error code in the errors table', () => {
    const ledger = doc('ledger.md');
    for (const code of Object.values(ErrorCode))
      expect(ledger).toMatch(new RegExp(`^\\| \`${code}\` \\|`, 'm'));
  });
});
