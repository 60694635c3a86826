// The rolling-upgrade rule (docs/operations.md "Rolling upgrades"): after the last breaking migration (8, which
// re-keyed tool_runs), every migration is expand-only, so the previous release runs on the new schema and the new
// release beside old processes. This reads the SQL of every later migration for what would break either.
import { describe, expect, it } from 'vitest';
import {
  LAST_BREAKING_VERSION,
  LATEST_VERSION,
  ledgerApplicationName,
  MIGRATIONS,
  parseLedgerApplicationName,
} from '../../../src/ledger/migrations.js';

// Statements that remove, rename, retype, re-key or tighten what running code reads or writes.
const CONTRACTING = [
  /\bDROP\s+(TABLE|COLUMN|INDEX|CONSTRAINT|SCHEMA|TYPE|FUNCTION|VIEW)\b/i,
  /\bRENAME\b/i,
  /\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b/i,
  /\bSET\s+NOT\s+NULL\b/i,
  /\bPRIMARY\s+KEY\b/i,
  /\bADD\s+COLUMN\b(?![^;]*\b(DEFAULT|NULL)\b)[^;]*\bNOT\s+NULL\b/i,
  // A statement that truncates (a trigger guarding against TRUNCATE names it too, mid-line).
  /^\s*TRUNCATE\b|\bDELETE\s+FROM\b/im,
];

/**
 * Drops allowed after migration 8: indexes no statement needs for its answers, so every release runs the same with
 * or without them (plans change, results don't). Each names its migration and the one index it drops.
 */
const PLAN_ONLY_DROPS: Readonly<Record<number, RegExp>> = {
  // The expiry BRIN: the purge sweeps by TID range (or scans), and nothing else filters on expiry through it.
  13: /^DROP INDEX IF EXISTS "some_schema"\.tool_runs_expires_idx$/,
};

describe('migrations after the last breaking one', () => {
  it('marks migration 8 as the one breaking migration', () => {
    expect(LAST_BREAKING_VERSION).toBe(8);
    expect(MIGRATIONS.filter((m) => m.breaking).map((m) => m.version)).toEqual([8]);
  });

  it.each(MIGRATIONS.filter((m) => m.version > LAST_BREAKING_VERSION).map((m) => [m.version, m] as const))(
    'migration %i is expand-only',
    (version, migration) => {
      const allowed = PLAN_ONLY_DROPS[version];
      const sql = migration
        .up('some_schema')
        .split(/;\n/)
        .filter((statement) => !allowed?.test(statement.trim()))
        .join(';\n');
      for (const pattern of CONTRACTING) expect(sql, `${migration.name}: ${pattern}`).not.toMatch(pattern);
    },
  );

  it('allows a drop only where it is named: the expiry index, in migration 13 alone', () => {
    const thirteen = MIGRATIONS.find((m) => m.version === 13)?.up('some_schema') ?? '';
    expect(thirteen.split(/;\n/).every((statement) => PLAN_ONLY_DROPS[13]?.test(statement.trim()))).toBe(
      true,
    );
    // The same drop in any other migration is still caught, and so is a drop of another index.
    expect(CONTRACTING.some((p) => p.test('DROP INDEX IF EXISTS "some_schema".tool_runs_job_idx'))).toBe(
      true,
    );
    expect(PLAN_ONLY_DROPS[13]?.test('DROP INDEX IF EXISTS "some_schema".tool_runs_job_idx')).toBe(false);
  });

  it('the breaking migration would be caught by the rule', () => {
    const eight = MIGRATIONS.find((m) => m.version === 8);
    expect(CONTRACTING.some((p) => p.test(eight?.up('s') ?? ''))).toBe(true);
  });

  it('names connections with the schema level and the schema, within 63 bytes', () => {
    expect(ledgerApplicationName('billing')).toBe(`tool-ledger v${LATEST_VERSION} billing`);
    expect(parseLedgerApplicationName(ledgerApplicationName('billing'))).toEqual({
      version: LATEST_VERSION,
      schema: 'billing',
    });
    expect(ledgerApplicationName('x'.repeat(80))).toHaveLength(63);
    expect(parseLedgerApplicationName('psql')).toBeUndefined();
  });
});
