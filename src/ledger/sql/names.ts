/**
 * Every statement tool-ledger runs is a small function of the schema, in the files of this folder: names.ts (the
 * identifiers and the settings), columns.ts (what reads return and the rules of expiry), claim-fields.ts (the
 * claim's parameters), claim.ts (the claim), runs.ts (the writes of a running execution) and purge.ts. Identifiers
 * are quoted here and nowhere else; values always travel as parameters.
 */

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

export function isValidSchemaName(schema: string): boolean {
  return IDENTIFIER.test(schema);
}

export function quoteIdent(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}

export function runsTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_runs`;
}

/** The audit of `tool-ledger forget`: who deleted which key's runs, when and why. */
export function forgottenTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_runs_forgotten`;
}

/** The audit of `tool-ledger resolve`: who settled which unknown outcome, when and how (migration 7). */
export function resolvedTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_runs_resolved`;
}

/** Per-deployment settings (migration 4): today only the key-hash secret telemetry and the CLI share. */
export function settingsTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_ledger_settings`;
}

/** The name of the key-hash secret's row in the settings table. */
export const KEY_HASH_SECRET_SETTING = 'key_hash_secret';

/** One setting's value. $1 name. */
export function readSettingSql(schema: string): string {
  return `SELECT value FROM ${settingsTable(schema)} WHERE name = $1::text`;
}

/** Stores a setting unless one is there: concurrent first starts all keep the first value. $1 name, $2 value. */
export function insertSettingSql(schema: string): string {
  return `INSERT INTO ${settingsTable(schema)} (name, value) VALUES ($1::text, $2::text) ON CONFLICT (name) DO NOTHING`;
}

/**
 * Replaces a setting (or stores it). $1 name, $2 value. The update takes its time from the row it would have
 * inserted: Citus refuses a function in `DO UPDATE SET` on its tables (the settings are a reference table there).
 */
export function replaceSettingSql(schema: string): string {
  return `INSERT INTO ${settingsTable(schema)} (name, value, updated_at) VALUES ($1::text, $2::text, now())
ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
RETURNING updated_at`;
}
