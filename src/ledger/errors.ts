import { ToolLedgerError } from '../contract/errors.js';

// SQLSTATE classes that mean "the database is not there right now", as opposed to a bug in a statement.
const UNAVAILABLE_CLASSES = ['08', '53', '57', '58'];

/** Wraps a driver failure in `LEDGER_UNAVAILABLE`, keeping the original as `cause`. */
export function ledgerUnavailable(error: unknown, doing: string): ToolLedgerError {
  if (error instanceof ToolLedgerError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const detail = error instanceof Error ? error.message : String(error);
  const transient =
    typeof code !== 'string' || UNAVAILABLE_CLASSES.some((c) => code.startsWith(c)) || code.startsWith('E');
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `The ledger could not ${doing}: ${detail}. Nothing was decided for this call; retry it with the same idempotency key once the database is reachable.`,
    { cause: error, retryable: transient || true },
  );
}
