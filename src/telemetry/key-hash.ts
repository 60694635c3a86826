import { createHmac } from 'node:crypto';
import { ToolLedgerError } from '../contract/errors.js';

/**
 * The value tool-ledger emits as `tool_ledger.idempotency.key_hash` for keys that may hold personal data:
 * lowercase hex HMAC-SHA256 of the UTF-8 key under `secret`. Support computes it from a raw key (same secret as
 * the service, usually `TOOL_LEDGER_KEY_HASH_SECRET`) and searches traces for it. A keyed hash rather than a
 * plain one, because plain hashes of emails or phone numbers are reversed by trying every candidate.
 */
export function hashKey(key: string, secret: string): string {
  if (typeof key !== 'string') {
    throw new ToolLedgerError('KEY_INVALID', `hashKey needs the raw key as a string, got ${typeof key}.`);
  }
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      'hashKey needs a non-empty secret: pass the value of TOOL_LEDGER_KEY_HASH_SECRET that the service uses.',
    );
  }
  return createHmac('sha256', secret).update(key, 'utf8').digest('hex');
}
