/**
 * TEMPORARY scrubber for `inspect` output, until the telemetry redactor (src/telemetry/redact, issue 3) lands;
 * then `inspect` should call that one so support sees exactly what telemetry would show.
 *
 * It is deliberately blunt: values under personal-looking field names are replaced whole, and emails, card
 * numbers and phone numbers are masked in any remaining string. Ids such as `inv_2024_0042` survive, because
 * support needs them to follow a call.
 */

const SENSITIVE_FIELD =
  /(e-?mail|phone|mobile|address|street|postcode|zip|^name$|first_?name|last_?name|full_?name|card|^pan$|cvv|cvc|ssn|social|iban|account_?number|dob|birth|password|passwd|secret|token|api_?key|authorization|cookie|session)/i;

const VALUE_PATTERNS: readonly RegExp[] = [
  /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g,
  /\b(?:4\d{3}|5[1-5]\d{2}|2[2-7]\d{2}|6(?:011|5\d{2}))(?:[ -]?\d{4}){3}\b/g,
  /\b3[47]\d{2}[ -]?\d{6}[ -]?\d{5}\b/g,
  /(?:\+?1[ .-]?)?(?:\(\d{3}\)|\b\d{3})[ .-]?\d{3}[ .-]\d{4}\b/g,
  /\+[1-9]\d{7,14}\b/g,
  /\b\d{3}-\d{2}-\d{4}\b/g,
];

export const MASK = '[redacted]';

export function scrubText(text: string): string {
  let out = text;
  for (const pattern of VALUE_PATTERNS) out = out.replace(pattern, MASK);
  return out;
}

export function scrubValue(value: unknown, depth = 0): unknown {
  if (depth > 32) return MASK;
  if (typeof value === 'string') return scrubText(value);
  if (Array.isArray(value)) return value.map((item) => scrubValue(item, depth + 1));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      out[key] = SENSITIVE_FIELD.test(key) && item !== null ? MASK : scrubValue(item, depth + 1);
    }
    return out;
  }
  return value;
}
