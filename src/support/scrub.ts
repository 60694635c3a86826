import { randomBytes } from 'node:crypto';
import { createRedactor } from '../telemetry/redact/default-redactor.js';

/**
 * Support (`inspect`, the console) shows results and errors through the same redactor telemetry uses, so support
 * sees no more personal data than a trace would show, and identifiers such as `inv_2024_0042` stay readable.
 */
const redactor = createRedactor();

export function scrubText(text: string): string {
  return redactor.redactText(text);
}

/** Strings longer than this are scrubbed as text even when they hold JSON. */
const MAX_EMBEDDED_JSON = 64 * 1024;

/** A string that holds a JSON object or array (a tool that returned serialized JSON), parsed; else undefined. */
function embeddedJson(text: string): object | undefined {
  const start = text.trimStart()[0];
  if ((start !== '{' && start !== '[') || text.length > MAX_EMBEDDED_JSON) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Scrubs a stored value. A string holding JSON is scrubbed as the structure it is and serialized again, so it
 * stays JSON: free-text scrubbing of serialized JSON would turn `"name": "Maria"` into `"name": [REDACTED]`.
 */
export function scrubValue(value: unknown, depth = 0): unknown {
  if (depth > 4) return redactor.redactValue(value);
  // Each embedded JSON string is set aside under a placeholder the redactor leaves alone, and put back scrubbed.
  const embedded = new Map<string, object>();
  const tag = randomBytes(6).toString('hex');
  const setAside = (node: unknown, level: number): unknown => {
    if (typeof node === 'string') {
      const parsed = embeddedJson(node);
      if (parsed === undefined) return node;
      const placeholder = `tljson${tag}x${embedded.size}`;
      embedded.set(placeholder, parsed);
      return placeholder;
    }
    if (node === null || typeof node !== 'object' || level > 8) return node;
    if (Array.isArray(node)) return node.map((item) => setAside(item, level + 1));
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, setAside(v, level + 1)]));
  };
  const scrubbed = redactor.redactValue(setAside(value, 0));
  if (embedded.size === 0) return scrubbed;
  const putBack = (node: unknown): unknown => {
    if (typeof node === 'string') {
      const inner = embedded.get(node);
      return inner === undefined ? node : JSON.stringify(scrubValue(inner, depth + 1));
    }
    if (node === null || typeof node !== 'object') return node;
    if (Array.isArray(node)) return node.map(putBack);
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, putBack(v)]));
  };
  return putBack(scrubbed);
}
