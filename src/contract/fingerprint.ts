import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { JsonValue } from './json.js';

function removePath(value: JsonValue, segments: readonly string[]): void {
  const [head, ...rest] = segments;
  if (head === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) return;
  if (rest.length === 0) {
    delete value[head];
    return;
  }
  const child = value[head];
  if (child !== undefined) removePath(child, rest);
}

/**
 * SHA-256 (hex) of the RFC 8785 canonical JSON of a tool's validated input, without its volatile fields.
 * Key order and whitespace never change the hash; the idempotency key is not part of it.
 * The value is modified in place, so pass a fresh copy (see `toJsonValue`).
 */
export function parameterHash(input: JsonValue, volatileFields: readonly string[] = []): string {
  for (const field of volatileFields) removePath(input, field.split('.'));
  const canonical = canonicalize(input) ?? 'null';
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}
