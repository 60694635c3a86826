import type { Redactor } from './options.js';
import { safeExecute } from './safe.js';

const TRUNCATION_MARK = '…[truncated]';

/**
 * Scrubbed JSON of a captured argument or result, or undefined when it cannot be produced (redactor failure,
 * unserializable value): captured content is best-effort and never worth failing a call for.
 */
export function captureContent(value: unknown, redactor: Redactor, maxLength: number): string | undefined {
  return safeExecute('content capture', () => {
    const scrubbed = redactor.redactValue(value);
    const json = typeof scrubbed === 'string' ? scrubbed : JSON.stringify(scrubbed);
    if (typeof json !== 'string') return undefined;
    return json.length <= maxLength ? json : json.slice(0, Math.max(0, maxLength)) + TRUNCATION_MARK;
  });
}
