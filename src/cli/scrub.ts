import { createRedactor } from '../telemetry/redact/default-redactor.js';

/**
 * `inspect` shows results and errors through the same redactor telemetry uses, so support sees no more personal
 * data than a trace would show, and identifiers such as `inv_2024_0042` stay readable.
 */
const redactor = createRedactor();

export function scrubText(text: string): string {
  return redactor.redactText(text);
}

export function scrubValue(value: unknown): unknown {
  return redactor.redactValue(value);
}
