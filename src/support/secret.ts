import { checkKeyHashSecret } from '../config/ledger.js';
import { readStoredSecret } from '../ledger/settings.js';
import { settingsTable } from '../ledger/sql/names.js';
import { configuredSecret } from '../telemetry/key-secret.js';
import { KEY_HASH_SECRET_ENV } from '../telemetry/vocabulary.js';
import type { SupportDb } from './db.js';

/** The secret support hashes keys under, and where it came from (said on stderr, so a mismatch can be traced). */
export interface SupportSecret {
  readonly secret: string;
  readonly source: string;
}

/**
 * The secret the service hashes under, as the service resolves it: `TOOL_LEDGER_KEY_HASH_SECRET` when set here
 * (the service must set the same one), else the deployment's secret stored in the ledger's schema. Throws
 * CONFIG_INVALID for a secret the service would refuse too.
 */
export async function supportSecret(
  env: NodeJS.ProcessEnv,
  db: SupportDb | undefined,
  schema: string,
): Promise<SupportSecret | undefined> {
  // Support hashes under the same secret as the service, so it refuses the same short ones.
  checkKeyHashSecret({}, env);
  const configured = configuredSecret({}, env);
  if (configured !== undefined) return { secret: configured, source: `$${KEY_HASH_SECRET_ENV}` };
  if (db === undefined) return undefined;
  const stored = await readStoredSecret(
    { query: async <R>(text: string, params?: unknown[]) => ({ rows: await db.query<R>(text, params) }) },
    schema,
  );
  return stored === undefined
    ? undefined
    : { secret: stored, source: `the secret in ${settingsTable(schema)}` };
}

/** What to do when there is no secret to hash under. */
export function noSecretHelp(schema: string): string {
  return `${KEY_HASH_SECRET_ENV} is not set and schema "${schema}" holds no key-hash secret: a ledger with telemetry stores one at its first start (after migration 4). Check --schema and DATABASE_URL, or export the secret the service uses`;
}
