import type { Redactor } from '../options.js';
import { isSensitiveField, isSensitivePair, normalizeFieldName, PAIR_VALUES } from './field-rules.js';
import { createFreeTextRedactor, DEFAULT_MAX_TEXT_LENGTH, TRUNCATION_MARK } from './free-text.js';

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
   * Patterns kept intact in free text (identifiers support searches for). They are applied after the detectors
   * of secrets, emails, cards, IBANs, IPs and national ids, so they cannot expose those, and before the rules for
   * phones, dates, addresses and names.
   * @default []
   */
  readonly preserve?: readonly RegExp[];
  /**
   * Words the name policy never removes (product or place names your errors mention), compared lower-cased.
   * @default [] (on top of a built-in list: postgres, redis, stripe, …)
   */
  readonly allowWords?: readonly string[];
  /**
   * Longest string scrubbed, in UTF-16 code units; the rest is cut before scrubbing and the result ends with
   * `…[truncated]`.
   * @default 8192
   */
  readonly maxTextLength?: number;
  /**
   * Most characters `redactValue` scrubs over all strings of one value; later strings become `[TRUNCATED]`.
   * @default 16384
   */
  readonly maxTotalLength?: number;
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
 * The built-in redactor: field-name rules for structured data plus tool-ledger's own free-text detection
 * (linear-time detectors with checksums, identifier shielding and a name policy backed by a names dictionary and
 * an English word list; see docs/telemetry.md). Strings inside structured values (and object keys) go through
 * free-text detection as well, so personal data under an innocent field name is still caught.
 */
export function createRedactor(options: RedactorOptions = {}): Redactor {
  const extra = new Set((options.sensitiveFields ?? []).map(normalizeFieldName));
  const maxTextLength = options.maxTextLength ?? DEFAULT_MAX_TEXT_LENGTH;
  const redactText = createFreeTextRedactor({
    preserve: options.preserve ?? [],
    allowWords: options.allowWords ?? [],
    maxTextLength,
  });
  const maxDepth = options.maxDepth ?? 8;
  const maxNodes = options.maxNodes ?? 1000;
  const maxTotalLength = options.maxTotalLength ?? 16_384;

  function redactValue(value: unknown): unknown {
    let budget = maxNodes;
    let characters = maxTotalLength;
    const seen = new WeakSet<object>();
    const text = (raw: string): string => {
      if (characters <= 0) return TRUNCATED;
      const scrubbed = redactText(raw.length > characters ? raw.slice(0, characters) : raw);
      const cut = raw.length > characters && !scrubbed.endsWith(TRUNCATION_MARK);
      characters -= Math.min(raw.length, maxTextLength);
      return cut ? scrubbed + TRUNCATION_MARK : scrubbed;
    };
    const walk = (node: unknown, depth: number): unknown => {
      if (--budget < 0) return TRUNCATED;
      switch (typeof node) {
        case 'string':
          return text(node);
        case 'number':
        case 'boolean':
          return node;
        case 'bigint':
          return text(node.toString());
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
      if (object instanceof Date) return Number.isNaN(object.getTime()) ? null : text(object.toISOString());
      if (object instanceof Error) return { name: object.name, message: text(object.message) };
      if (Array.isArray(object)) {
        const out: unknown[] = [];
        for (const item of object) {
          if (budget <= 0) {
            out.push(TRUNCATED);
            break;
          }
          out.push(walk(item, depth + 1));
        }
        return out;
      }
      if (object instanceof Map) return walk(Object.fromEntries(object), depth);
      if (object instanceof Set) return walk([...object], depth);
      const out: Record<string, unknown> = {};
      const record = object as Record<string, unknown>;
      const pair = isSensitivePair(record, extra);
      for (const field in object) {
        if (!Object.hasOwn(object, field)) continue;
        if (budget <= 0 || characters <= 0) {
          out[TRUNCATED] = TRUNCATED;
          break;
        }
        const sensitive =
          isSensitiveField(field, extra) || (pair && PAIR_VALUES.has(normalizeFieldName(field)));
        out[text(field)] = sensitive ? REDACTED : walk(record[field], depth + 1);
      }
      return out;
    };
    return walk(value, 0);
  }

  return { redactText, redactValue };
}
