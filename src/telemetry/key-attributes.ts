import type { Attributes } from '@opentelemetry/api';
import { hashKey } from './key-hash.js';
import type { Redactor, TelemetryOptions } from './options.js';
import { safeExecute, warnOnce } from './safe.js';
import { ATTR, KEY_HASH_SECRET_ENV } from './vocabulary.js';

export type KeyMode = NonNullable<TelemetryOptions['keyMode']>;

/**
 * The key attributes of a call: the raw key when it is safe to show, otherwise its HMAC. A key the redactor
 * cannot judge (it threw) is treated as personal data.
 */
export function keyAttributes(
  key: string | undefined,
  mode: KeyMode,
  secret: string | undefined,
  redactor: Redactor,
): Attributes {
  if (typeof key !== 'string' || key.length === 0) return {};
  if (mode === 'raw') return { [ATTR.IDEMPOTENCY_KEY]: key };
  if (mode === 'auto') {
    const scrubbed = safeExecute('redactor.redactText', () => redactor.redactText(key));
    if (scrubbed === key) return { [ATTR.IDEMPOTENCY_KEY]: key };
  }
  if (secret === undefined || secret.length === 0) {
    warnOnce(
      `idempotency keys that may hold personal data are left out of telemetry: set ${KEY_HASH_SECRET_ENV} (or telemetry.keyHashSecret) to emit them as ${ATTR.IDEMPOTENCY_KEY_HASH}`,
    );
    return {};
  }
  const hash = safeExecute('key hash', () => hashKey(key, secret));
  return hash === undefined ? {} : { [ATTR.IDEMPOTENCY_KEY_HASH]: hash };
}

const CACHE_LIMIT = 1000;

/**
 * `keyAttributes` with the answers for recent keys remembered: a retried call repeats its key, and scrubbing a key
 * is the most expensive part of a call's telemetry. Cleared when full rather than evicting one by one.
 */
export function cachedKeyAttributes(
  mode: KeyMode,
  secret: string | undefined,
  redactor: Redactor,
): (key: string | undefined) => Readonly<Attributes> {
  const cache = new Map<string, Attributes>();
  return (key) => {
    if (typeof key !== 'string') return {};
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const attributes = keyAttributes(key, mode, secret, redactor);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(key, attributes);
    return attributes;
  };
}
