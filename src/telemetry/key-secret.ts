import { randomBytes } from 'node:crypto';
import type { TelemetryOptions } from './options.js';
import { KEY_HASH_SECRET_ENV } from './vocabulary.js';

/**
 * Where the secret keys and parameter hashes are HMAC'd under comes from (docs/telemetry.md, "Keys"): the
 * configured one (`telemetry.keyHashSecret`, else `TOOL_LEDGER_KEY_HASH_SECRET`), else the deployment's, stored in
 * the ledger's schema so that every process and the CLI agree. Telemetry knows no SQL: the ledger stores and reads
 * the deployment's secret (src/ledger/settings.ts) and hands telemetry the `DeploymentSecret` below.
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

/** The deployment's secret as the ledger read it, or why there is none. */
export type DeploymentSecret =
  | { readonly secret: string }
  | { readonly secret?: undefined /** Why there is none, and what to do. */; readonly missing: string };
