import type { Redactor } from '../options.js';
import { isSensitiveField, normalizeFieldName } from './field-rules.js';
import { createFreeTextRedactor, DEFAULT_PRESERVE, type PreservePattern } from './free-text.js';

/** What replaces a value stored under a sensitive field name. */
export const REDACTED = '[REDACTED]';

/** Options of {@link createRedactor}. */
export interface RedactorOptions {
  /**
   * More field names whose values are replaced whole, on top of the built-in rules (email, phone, address, name,
   * card, ssn, iban, dob, password, token, secret, authorization and the like). Compared case- and
   * separator-insensitively.
   * @default []
   */
  readonly sensitiveFields?: readonly string[];
  /**
   * Patterns kept intact in free text (identifiers support searches for), checked before detection runs. A
   * pattern here wins over detection, so keep it narrow.
   * @default UUIDs
   */
  readonly preserve?: readonly RegExp[];
  /**
   * How deep `redactValue` walks before replacing the rest with `[TRUNCATED]`.
   * @default 8
   */
  readonly maxDepth?: number;
  /**
   * How many values `redactValue` visits before replacing the rest with `[TRUNCATED]`.
   * @default 1000
   */
  readonly maxNodes?: number;
}

const TRUNCATED = '[TRUNCATED]';

/**
 * The built-in redactor: field-name rules for structured data plus redact-pii's local free-text detection,
 * configured to keep identifiers such as `inv_2024_0042` intact. Strings inside structured values (and object
 * keys) go through free-text detection as well, so personal data under an innocent field name is still caught.
 */
export function createRedactor(options: RedactorOptions = {}): Redactor {
  const extra = new Set((options.sensitiveFields ?? []).map(normalizeFieldName));
  const preserve: readonly PreservePattern[] = [...DEFAULT_PRESERVE, ...(options.preserve ?? [])];
  const redactText = createFreeTextRedactor(preserve);
  const maxDepth = options.maxDepth ?? 8;
  const maxNodes = options.maxNodes ?? 1000;

  function redactValue(value: unknown): unknown {
    let budget = maxNodes;
    const seen = new WeakSet<object>();
    const walk = (node: unknown, depth: number): unknown => {
      if (--budget < 0) return TRUNCATED;
      switch (typeof node) {
        case 'string':
          return redactText(node);
        case 'number':
        case 'boolean':
          return node;
        case 'bigint':
          return redactText(node.toString());
        case 'undefined':
        case 'function':
        case 'symbol':
          return undefined;
      }
      if (node === null) return null;
      const object = node as object;
      if (depth >= maxDepth) return TRUNCATED;
      if (seen.has(object)) return '[CIRCULAR]';
      seen.add(object);
      if (object instanceof Date)
        return Number.isNaN(object.getTime()) ? null : redactText(object.toISOString());
      if (object instanceof Error) return { name: object.name, message: redactText(object.message) };
      if (Array.isArray(object)) return object.map((item) => walk(item, depth + 1));
      if (object instanceof Map) return walk(Object.fromEntries(object), depth);
      if (object instanceof Set) return walk([...object], depth);
      const out: Record<string, unknown> = {};
      for (const [field, child] of Object.entries(object)) {
        const safeField = redactText(field);
        out[safeField] = isSensitiveField(field, extra) ? REDACTED : walk(child, depth + 1);
      }
      return out;
    };
    return walk(value, 0);
  }

  return { redactText, redactValue };
}
