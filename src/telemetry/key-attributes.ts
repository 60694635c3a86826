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
