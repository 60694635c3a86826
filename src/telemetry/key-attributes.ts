import type { Attributes } from '@opentelemetry/api';
import { boundedCache } from './bounded-cache.js';
import { hashKey, keyHasher } from './key-hash.js';
import { isAcceptableKey, isRawSafeKey } from './key-policy.js';
import { type DeploymentSecret, newSecret } from './key-secret.js';
import type { Redactor, TelemetryOptions } from './options.js';
import { safeExecute, warnOnce } from './safe.js';
import { ATTR, KEY_HASH_SECRET_ENV } from './vocabulary.js';

export type KeyMode = NonNullable<TelemetryOptions['keyMode']>;

/**
 * The secret keys and parameter hashes are HMAC'd under: the configured one, else the deployment's (read from the
 * ledger's schema at start), else one made for this process, so every span still carries its key in one form.
 * Only that last one cannot be reproduced by support tools, hence the warning, which says why there is no
 * deployment secret when a ledger tried to read one.
 */
export function resolveSecret(
  configured: string | undefined,
  deployment: DeploymentSecret | undefined = undefined,
): string {
  if (configured !== undefined && configured.length > 0) return configured;
  if (deployment?.secret !== undefined) return deployment.secret;
  const why =
    deployment?.missing ??
    "there is no ledger to hold the deployment's secret (telemetry used without createLedger)";
  warnOnce(
    `no ${KEY_HASH_SECRET_ENV} (or telemetry.keyHashSecret) is set and ${why}. Until then, keys that are not safe to show are hashed under a secret made for this process, which support tools cannot reproduce; or set the same secret in every process and in the CLI`,
  );
  return newSecret();
}

/**
 * The key attributes of a call: the raw key when its format or the conservative check says it is safe to show
 * (see key-policy.ts), otherwise its HMAC. A key the ledger would refuse (too long, unprintable) is never
 * scrubbed or hashed: the call is rejected with `key_invalid` and the span carries no key. A key the redactor
 * cannot judge (it threw) is hashed.
 */
export function keyAttributes(
  key: string | undefined,
  mode: KeyMode,
  secret: string,
  redactor: Redactor,
): Attributes {
  if (typeof key !== 'string' || !isAcceptableKey(key)) return {};
  return acceptableKeyAttributes(key, mode, (text) => hashKey(text, secret), redactor);
}

/** `keyAttributes` of a key `isAcceptableKey` has passed. */
function acceptableKeyAttributes(
  key: string,
  mode: KeyMode,
  hash: (key: string) => string,
  redactor: Redactor,
): Attributes {
  if (mode === 'raw') return { [ATTR.IDEMPOTENCY_KEY]: key };
  if (mode === 'auto') {
    const safe = safeExecute('key check', () => isRawSafeKey(key, (text) => redactor.redactText(text)));
    if (safe === true) return { [ATTR.IDEMPOTENCY_KEY]: key };
  }
  const hashed = safeExecute('key hash', () => hash(key));
  return hashed === undefined ? {} : { [ATTR.IDEMPOTENCY_KEY_HASH]: hashed };
}

/**
 * `keyAttributes` with the answers for recent keys remembered: a retried or replayed call repeats its key. As many
 * keys as the ledger's replay cache holds by default, so a replay it answers from memory finds its key here too.
 */
export function cachedKeyAttributes(
  mode: KeyMode,
  secret: string,
  redactor: Redactor,
): (key: string | undefined) => Readonly<Attributes> {
  const hash = keyHasher(secret);
  const cached = boundedCache(
    (key) => Object.freeze(acceptableKeyAttributes(key, mode, hash, redactor)),
    REMEMBERED_KEYS,
  );
  // Checked before the lookup: a refused 1 MB key would cost a hash of all of it, and then be kept in the cache.
  return (key) => (typeof key === 'string' && isAcceptableKey(key) ? (cached(key) ?? NO_KEY) : NO_KEY);
}

const NO_KEY: Readonly<Attributes> = Object.freeze({});
const REMEMBERED_KEYS = 10_000;
