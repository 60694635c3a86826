import type { Attributes, AttributeValue } from '@opentelemetry/api';

function isPrimitive(value: unknown): value is string | number | boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    default:
      return false;
  }
}

/**
 * A valid OpenTelemetry attribute value, or undefined. Values the SDK would reject (objects, NaN, mixed arrays)
 * are dropped here so that one bad field loses one attribute, never the span or the call.
 */
export function toAttributeValue(value: unknown): AttributeValue | undefined {
  if (isPrimitive(value)) return value;
  if (Array.isArray(value) && value.length > 0 && value.every(isPrimitive)) {
    const type = typeof value[0];
    if (value.every((item) => typeof item === type)) return value as AttributeValue;
  }
  return undefined;
}

/** Sets `key` on `target` when `value` is a valid attribute value. */
export function put(target: Attributes, key: string, value: unknown): void {
  const valid = toAttributeValue(value);
  if (valid !== undefined) target[key] = valid;
}
