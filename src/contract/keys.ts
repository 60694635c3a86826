import { ToolLedgerError } from './errors.js';

export const MAX_KEY_LENGTH = 255;

// Control characters and unpaired surrogates cannot be stored verbatim in Postgres text (or are invisible in a
// support console), so keys made of them would silently collide or be unsearchable.
const UNPRINTABLE = /[\p{Cc}\p{Cs}\u2028\u2029]/u;

export function describeUnprintable(value: string): string | undefined {
  if (!value.isWellFormed()) return 'contains an unpaired surrogate';
  const match = UNPRINTABLE.exec(value);
  if (match)
    return `contains the control character U+${match[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  return undefined;
}

/**
 * Why the ledger refuses `key`, or undefined when it takes it: the one key rule, shared by the ledger, telemetry
 * (which never scrubs or hashes a refused key) and the adapters. Length first, in UTF-16 code units, so a 1 MB key
 * is refused by one comparison before anything walks it.
 */
export function keyProblem(key: string): string | undefined {
  if (key.length === 0) return 'is empty';
  if (key.length > MAX_KEY_LENGTH * 2) return `is ${key.length} UTF-16 code units long`;
  // A blank key names no intent: it is almost always an unset variable padded by a template.
  if (key.trim().length === 0) return 'is only whitespace';
  // Never more characters than code units: only a key longer than the limit in units needs counting.
  if (key.length > MAX_KEY_LENGTH) {
    const length = [...key].length;
    if (length > MAX_KEY_LENGTH) return `is ${length} characters long`;
  }
  return describeUnprintable(key);
}

/** Throws `KEY_INVALID` unless the key is a non-empty printable string of at most 255 characters. */
export function assertValidKey(key: unknown, tool: string): asserts key is string {
  const fail = (why: string) =>
    new ToolLedgerError(
      'KEY_INVALID',
      `Idempotency key for tool "${tool}" ${why}. Use a non-empty printable string of at most ${MAX_KEY_LENGTH} characters that names this intent, for example a UUID or deriveKey({ runId, toolCallId }).`,
    );
  if (typeof key !== 'string') throw fail(`must be a string, got ${key === null ? 'null' : typeof key}`);
  const why = keyProblem(key);
  if (why) throw fail(why);
}

/** Tenant and user ids are stored verbatim; only what Postgres cannot store is refused. */
export function assertStorableId(
  value: unknown,
  field: 'tenant' | 'user',
  tool: string,
): asserts value is string {
  const fail = (why: string) =>
    new ToolLedgerError(
      'CONTEXT_INVALID',
      `The ${field} passed to tool "${tool}" ${why}. Pass a non-empty string without control characters.`,
    );
  if (typeof value !== 'string')
    throw fail(`must be a string, got ${value === null ? 'null' : typeof value}`);
  if (value.length === 0) throw fail('is empty');
  if (value.length > 1024) throw fail(`is ${value.length} characters long (at most 1024)`);
  if (value.includes('\u0000') || !value.isWellFormed())
    throw fail('contains a NUL or an unpaired surrogate');
}
