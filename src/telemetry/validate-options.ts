import { ToolLedgerError } from '../contract/errors.js';
import type { TelemetryOptions } from './options.js';

const KEY_MODES = new Set(['auto', 'raw', 'hash']);

function invalid(what: string): ToolLedgerError {
  return new ToolLedgerError('CONFIG_INVALID', `telemetry.${what}`);
}

/**
 * Rejects telemetry options that cannot work, when the ledger is created: a typo found at startup costs less than
 * telemetry that silently records nothing (or records raw keys) in production.
 */
export function validateTelemetryOptions(options: TelemetryOptions): void {
  if (options === null || typeof options !== 'object') {
    throw new ToolLedgerError('CONFIG_INVALID', 'telemetry must be an options object or false.');
  }
  const { keyMode, metricTenants, maxContentLength, keyHashSecret, redactor, captureContent } = options;
  if (keyMode !== undefined && !KEY_MODES.has(keyMode)) {
    throw invalid(`keyMode must be 'auto', 'raw' or 'hash', got ${JSON.stringify(keyMode)}.`);
  }
  if (
    metricTenants !== undefined &&
    (!Array.isArray(metricTenants) || !metricTenants.every((t) => typeof t === 'string'))
  ) {
    throw invalid('metricTenants must be an array of tenant ids (strings).');
  }
  if (maxContentLength !== undefined && (!Number.isInteger(maxContentLength) || maxContentLength < 0)) {
    throw invalid(`maxContentLength must be a non-negative integer, got ${String(maxContentLength)}.`);
  }
  if (keyHashSecret !== undefined && typeof keyHashSecret !== 'string') {
    throw invalid('keyHashSecret must be a string; set it or TOOL_LEDGER_KEY_HASH_SECRET.');
  }
  if (captureContent !== undefined && typeof captureContent !== 'boolean') {
    throw invalid('captureContent must be true or false.');
  }
  if (
    redactor !== undefined &&
    (redactor === null ||
      typeof redactor.redactText !== 'function' ||
      typeof redactor.redactValue !== 'function')
  ) {
    throw invalid(
      'redactor must have redactText(text) and redactValue(value) functions (see createRedactor()).',
    );
  }
}
