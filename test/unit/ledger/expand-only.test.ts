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

describe('migrations after the last breaking one', () => {
  it('marks migration 8 as the one breaking migration', () => {
    expect(LAST_BREAKING_VERSION).toBe(8);
    expect(MIGRATIONS.filter((m) => m.breaking).map((m) => m.version)).toEqual([8]);
  });

  it.each(MIGRATIONS.filter((m) => m.version > LAST_BREAKING_VERSION).map((m) => [m.version, m] as const))(
    'migration %i is expand-only',
    (_version, migration) => {
      const sql = migration.up('some_schema');
      for (const pattern of CONTRACTING) expect(sql, `${migration.name}: ${pattern}`).not.toMatch(pattern);
    },
  );

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
