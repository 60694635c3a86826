import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { ToolLedgerError } from '../contract/errors.js';

function checkKey(key: string): void {
  if (typeof key !== 'string') {
    throw new ToolLedgerError('KEY_INVALID', `hashKey needs the raw key as a string, got ${typeof key}.`);
  }
}

function checkSecret(secret: string): void {
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      'hashKey needs a non-empty secret: pass the value of TOOL_LEDGER_KEY_HASH_SECRET that the service uses.',
    );
  }
}

/**
 * The value tool-ledger emits as `tool_ledger.idempotency.key_hash` for keys that may hold personal data:
 * lowercase hex HMAC-SHA256 of the UTF-8 key under `secret`. Support computes it from a raw key (same secret as
 * the service, usually `TOOL_LEDGER_KEY_HASH_SECRET`) and searches traces for it. A keyed hash rather than a
 * plain one, because plain hashes of emails or phone numbers are reversed by trying every candidate.
 */
export function hashKey(key: string, secret: string): string {
  checkKey(key);
  checkSecret(secret);
  return createHmac('sha256', secret).update(key, 'utf8').digest('hex');
}

/**
 * `hashKey` under one secret, for hashing on every call: the secret becomes a key object once, instead of being
 * encoded again by each HMAC. Same output as `hashKey`.
 */
export function keyHasher(secret: string): (key: string) => string {
  let keyObject: KeyObject | undefined;
  return (key) => {
    checkKey(key);
    checkSecret(secret);
    keyObject ??= createSecretKey(Buffer.from(secret, 'utf8'));
    return createHmac('sha256', keyObject).update(key, 'utf8').digest('hex');
  };
}
