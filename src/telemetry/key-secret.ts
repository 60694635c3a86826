import { randomBytes } from 'node:crypto';
import type { Queryable } from '../contract/types.js';
import {
  insertSettingSql,
  KEY_HASH_SECRET_SETTING,
  readSettingSql,
  replaceSettingSql,
  settingsTable,
} from '../ledger/sql.js';
import type { TelemetryOptions } from './options.js';
import { KEY_HASH_SECRET_ENV } from './vocabulary.js';

/**
 * Where the secret keys and parameter hashes are HMAC'd under comes from (docs/telemetry.md, "Keys"): the
 * configured one (`telemetry.keyHashSecret`, else `TOOL_LEDGER_KEY_HASH_SECRET`), else the deployment's, stored in
 * the ledger's schema so that every process and the CLI agree.
 */

/** The secret set by option or environment, when one is; it wins over the stored one everywhere. */
export function configuredSecret(
  options: Pick<TelemetryOptions, 'keyHashSecret'>,
  env: Readonly<Record<string, string | undefined>> | undefined = typeof process === 'undefined'
    ? undefined
    : process.env,
): string | undefined {
  const value = options.keyHashSecret || env?.[KEY_HASH_SECRET_ENV];
  return value === undefined || value.length === 0 ? undefined : value;
}

/** A new deployment secret: 32 random bytes as hex, so it can be typed, pasted and passed as an env var. */
export function newSecret(): string {
  return randomBytes(32).toString('hex');
}

const UNDEFINED_TABLE = '42P01';
const INSUFFICIENT_PRIVILEGE = '42501';

function sqlState(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

/** The deployment's stored secret; undefined when the schema has no settings table (before migration 4) or no row. */
export async function readStoredSecret(db: Queryable, schema: string): Promise<string | undefined> {
  try {
    const { rows } = await db.query<{ value: string }>(readSettingSql(schema), [KEY_HASH_SECRET_SETTING]);
    const value = rows[0]?.value;
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  } catch (error) {
    if (sqlState(error) === UNDEFINED_TABLE) return undefined;
    throw error;
  }
}

export type DeploymentSecret =
  | { readonly secret: string }
  | { readonly secret?: undefined /** Why there is none, and what to do. */; readonly missing: string };

/**
 * The deployment's secret, made at the first start: generated here, stored unless a row is there already (a
 * concurrent first start may have won), then read back, so every process ends up with the one that was stored.
 * A schema that cannot hold it yet (not migrated, or a database user without the rights) gives the reason
 * instead; connection failures are thrown, for the caller's start-up error.
 */
export async function loadDeploymentSecret(db: Queryable, schema: string): Promise<DeploymentSecret> {
  const table = settingsTable(schema);
  try {
    const stored = await readStoredSecret(db, schema);
    if (stored !== undefined) return { secret: stored };
    try {
      await db.query(insertSettingSql(schema), [KEY_HASH_SECRET_SETTING, newSecret()]);
    } catch (error) {
      if (sqlState(error) === UNDEFINED_TABLE) {
        return {
          missing: `schema "${schema}" has no ${table} table yet (migration 4): apply the ledger's migrations (createLedger with migrate: true, \`tool-ledger migrate\` or ledger.migrationSql()) and restart`,
        };
      }
      if (sqlState(error) !== INSUFFICIENT_PRIVILEGE) throw error;
      return {
        missing: `the database user may not store the deployment's secret in ${table}: create it once as the ledger's owner with \`tool-ledger rotate-key-secret --schema ${schema} --yes\` (or GRANT INSERT on it) and restart`,
      };
    }
    const secret = await readStoredSecret(db, schema);
    if (secret !== undefined) return { secret };
    return { missing: `no secret could be read back from ${table}: check the table, then restart` };
  } catch (error) {
    if (sqlState(error) !== INSUFFICIENT_PRIVILEGE) throw error;
    return {
      missing: `the database user may not read ${table}: GRANT SELECT, INSERT ON ${table} to it and restart`,
    };
  }
}

/** Replaces the deployment's secret with a new one (`tool-ledger rotate-key-secret`). Returns when it changed. */
export async function rotateStoredSecret(db: Queryable, schema: string): Promise<Date> {
  const { rows } = await db.query<{ updated_at: Date }>(replaceSettingSql(schema), [
    KEY_HASH_SECRET_SETTING,
    newSecret(),
  ]);
  const updatedAt = rows[0]?.updated_at;
  return updatedAt instanceof Date ? updatedAt : new Date(String(updatedAt));
}
