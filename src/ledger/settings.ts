import { randomBytes } from 'node:crypto';
import type { Queryable } from '../contract/types.js';
import { classifyDriverError } from './driver-errors.js';
import {
  insertSettingSql,
  KEY_HASH_SECRET_SETTING,
  readSettingSql,
  replaceSettingSql,
  settingsTable,
} from './sql/names.js';

/**
 * The deployment's settings row (migration 4's `tool_ledger_settings`): today only the key-hash secret, which every
 * process and the CLI must agree on. The ledger stores and reads it; telemetry receives the secret (or why there
 * is none) and never sees the SQL.
 */

/** The stored secret, or why there is none and what to do. Structurally the `DeploymentSecret` telemetry takes. */
export type StoredSecret =
  | { readonly secret: string }
  | { readonly secret?: undefined /** Why there is none, and what to do. */; readonly missing: string };

/** A new deployment secret: 32 random bytes as hex, so it can be typed, pasted and passed as an env var. */
function newDeploymentSecret(): string {
  return randomBytes(32).toString('hex');
}

const conditionOf = (error: unknown) => classifyDriverError(error).condition;

/** The deployment's stored secret; undefined when the schema has no settings table (before migration 4) or no row. */
export async function readStoredSecret(db: Queryable, schema: string): Promise<string | undefined> {
  try {
    const { rows } = await db.query<{ value: string }>(readSettingSql(schema), [KEY_HASH_SECRET_SETTING]);
    const value = rows[0]?.value;
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  } catch (error) {
    if (conditionOf(error) === 'undefined_table') return undefined;
    throw error;
  }
}

/**
 * The deployment's secret, made at the first start: generated here, stored unless a row is there already (a
 * concurrent first start may have won), then read back, so every process ends up with the one that was stored.
 * A schema that cannot hold it yet (not migrated, or a database user without the rights) gives the reason
 * instead; connection failures are thrown, for the caller's start-up error.
 */
export async function loadDeploymentSecret(db: Queryable, schema: string): Promise<StoredSecret> {
  const table = settingsTable(schema);
  try {
    const stored = await readStoredSecret(db, schema);
    if (stored !== undefined) return { secret: stored };
    try {
      await db.query(insertSettingSql(schema), [KEY_HASH_SECRET_SETTING, newDeploymentSecret()]);
    } catch (error) {
      const condition = conditionOf(error);
      if (condition === 'undefined_table') {
        return {
          missing: `schema "${schema}" has no ${table} table yet (migration 4): apply the ledger's migrations (createLedger with migrate: true, \`tool-ledger migrate\` or ledger.migrationSql()) and restart`,
        };
      }
      if (condition !== 'insufficient_privilege') throw error;
      return {
        missing: `the database user may not store the deployment's secret in ${table}: create it once as the ledger's owner with \`tool-ledger rotate-key-secret --schema ${schema} --yes\` (or GRANT INSERT on it) and restart`,
      };
    }
    const secret = await readStoredSecret(db, schema);
    if (secret !== undefined) return { secret };
    return { missing: `no secret could be read back from ${table}: check the table, then restart` };
  } catch (error) {
    if (conditionOf(error) !== 'insufficient_privilege') throw error;
    return {
      missing: `the database user may not read ${table}: GRANT SELECT, INSERT ON ${table} to it and restart`,
    };
  }
}

/** Replaces the deployment's secret with a new one (`tool-ledger rotate-key-secret`). Returns when it changed. */
export async function rotateStoredSecret(db: Queryable, schema: string): Promise<Date> {
  const { rows } = await db.query<{ updated_at: Date }>(replaceSettingSql(schema), [
    KEY_HASH_SECRET_SETTING,
    newDeploymentSecret(),
  ]);
  const updatedAt = rows[0]?.updated_at;
  return updatedAt instanceof Date ? updatedAt : new Date(String(updatedAt));
}
