import { randomBytes } from 'node:crypto';
import { keyAttributes } from '../telemetry/key-attributes.js';
import { hashKey } from '../telemetry/key-hash.js';
import { createRedactor } from '../telemetry/redact/default-redactor.js';
import { ATTR, KEY_HASH_SECRET_ENV } from '../telemetry/vocabulary.js';

/** A stored key as telemetry would show it: raw when the telemetry key check says it is safe, else its HMAC. */
export interface KeyForm {
  /** The raw key, only when telemetry would emit it raw. */
  readonly key: string | null;
  /** `tool_ledger.idempotency.key_hash` of the key when it is not safe to show and the secret is known. */
  readonly keyHash: string | null;
}

const redactor = createRedactor();
// The classification needs some secret; when support has none, the hash made under this one is thrown away.
const THROWAWAY_SECRET = randomBytes(32).toString('hex');

/** Delegates the decision to telemetry's `keyAttributes`, so the CLI never shows a key a trace would hide. */
export function keyForm(key: string, secret: string | undefined): KeyForm {
  const attributes = keyAttributes(key, 'auto', secret || THROWAWAY_SECRET, redactor);
  const raw = attributes[ATTR.IDEMPOTENCY_KEY];
  if (typeof raw === 'string') return { key: raw, keyHash: null };
  if (!secret) return { key: null, keyHash: null };
  const hash = attributes[ATTR.IDEMPOTENCY_KEY_HASH];
  // Telemetry emits nothing for a key the ledger refuses (unprintable, too long); such a row can still be stored
  // by hand, and support needs to name it without printing it.
  return { key: null, keyHash: typeof hash === 'string' ? hash : hashKey(key, secret) };
}

/** One table cell: the raw key, `hmac:<hash>`, or a note saying how to see the hash. */
export function keyCell(form: KeyForm): string {
  if (form.key !== null) return form.key;
  return form.keyHash === null ? `(hidden: set ${KEY_HASH_SECRET_ENV})` : `hmac:${form.keyHash}`;
}

/** How an audit table records a key: the telemetry attribute it travels under and its value there; null when hidden. */
export function auditedKey(form: KeyForm): { readonly attribute: string; readonly value: string } | null {
  if (form.key !== null) return { attribute: ATTR.IDEMPOTENCY_KEY, value: form.key };
  return form.keyHash === null ? null : { attribute: ATTR.IDEMPOTENCY_KEY_HASH, value: form.keyHash };
}
