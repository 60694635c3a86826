import { ToolLedgerError } from '../contract/errors.js';

// The bounds every option is checked against, the checks themselves, and the small resolvers of `purgeExpired()` and
// `close()`. The ledger's options resolve in ./ledger.ts, a tool's in ./tool.ts, the gateway's in ./gateway.ts.

/** A `CONFIG_INVALID` error: what is wrong with an option, and what it takes. */
export function invalid(message: string): ToolLedgerError {
  return new ToolLedgerError('CONFIG_INVALID', message);
}

export function checkCount(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0)
    throw invalid(`${name} must be an integer >= 0, got ${String(value)}.`);
  return value;
}

/**
 * The largest delay Node's timers take (2^31 - 1 ms, about 24.8 days); a longer one fires at once, which would
 * renew a lease every millisecond or end a wait immediately.
 */
export const MAX_TIMER_SECONDS = 2_147_483;
/** ttlSeconds drives no timer, only SQL arithmetic: a century is plenty and keeps timestamps sane. */
export const MAX_TTL_SECONDS = 100 * 365 * 86_400;

export function checkSeconds(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number = MAX_TIMER_SECONDS,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw invalid(`${name} must be a finite number of seconds from ${min} to ${max}, got ${String(value)}.`);
  }
  return value;
}

/** Refuses option names the type does not know (a typo such as `leaseSecond` would otherwise be ignored). */
export function checkKnown(what: string, options: object, known: Readonly<Record<string, true>>): void {
  for (const name of Object.keys(options)) {
    if (known[name]) continue;
    const hint = Object.keys(known).find((k) => k.toLowerCase().startsWith(name.toLowerCase().slice(0, 4)));
    throw invalid(
      `${what} has no option "${name}"${hint ? `; did you mean "${hint}"?` : ''}. Known options: ${Object.keys(known).join(', ')}.`,
    );
  }
}

export const PURGE_DEFAULTS = Object.freeze({ batchSize: 1000, maxRowsPerSecond: 25_000 });
export const CLOSE_DEFAULTS = Object.freeze({ timeoutSeconds: 10 });

/** `purgeExpired()` options with defaults resolved. */
export function resolveBatchSize(batchSize: number | undefined): number {
  const size = batchSize ?? PURGE_DEFAULTS.batchSize;
  if (!Number.isInteger(size) || size < 1)
    throw invalid(`batchSize must be a positive integer, got ${size}.`);
  return size;
}

/** `purgeExpired()`'s rate cap, defaults resolved: a positive number of rows per second, or `Infinity`. */
export function resolvePurgeRate(maxRowsPerSecond: number | undefined): number {
  const rate = maxRowsPerSecond ?? PURGE_DEFAULTS.maxRowsPerSecond;
  if (typeof rate !== 'number' || Number.isNaN(rate) || rate <= 0) {
    throw invalid(
      `maxRowsPerSecond must be a positive number of rows per second (Infinity for no cap), got ${String(rate)}.`,
    );
  }
  return rate;
}

/** `close()`'s timeout in milliseconds, defaults resolved. */
export function resolveCloseTimeoutMs(timeoutSeconds: number | undefined): number {
  return checkSeconds('timeoutSeconds', timeoutSeconds, CLOSE_DEFAULTS.timeoutSeconds, 0) * 1000;
}
