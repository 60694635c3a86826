import { ErrorCode, ToolFailure, ToolLedgerError } from '../contract/errors.js';
import { toJsonValue } from '../contract/json.js';
import type { StoredError } from '../contract/types.js';

function storableDetails(details: unknown): unknown {
  if (details === undefined) return undefined;
  try {
    return toJsonValue(details, { storable: true });
  } catch {
    return undefined;
  }
}

function storableText(text: string): string {
  // jsonb refuses NUL and unpaired surrogates; a failure record must never fail to save because of its message.
  return text.replaceAll('\u0000', '').toWellFormed();
}

/** The JSON form of a handler failure, as stored in `error_json`. No stack: stacks leak paths and data. */
export function toStoredError(error: unknown, final: boolean): StoredError {
  if (error instanceof ToolFailure) {
    const details = storableDetails(error.details);
    return {
      name: error.name,
      code: error.code,
      message: storableText(error.message),
      final,
      ...(error.reason === undefined ? {} : { reason: storableText(error.reason) }),
      ...(details === undefined ? {} : { details }),
    };
  }
  if (error instanceof ToolLedgerError) {
    return { name: error.name, code: error.code, message: storableText(error.message), final };
  }
  const name = error instanceof Error ? error.name : 'Error';
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  return {
    name: storableText(name),
    code: typeof code === 'string' ? storableText(code) : 'HANDLER_ERROR',
    message: storableText(message),
    final,
  };
}

/** The codes a final failure recorded by the ledger itself can carry, replayed as the same `ToolLedgerError`. */
const LEDGER_CODES = new Set<string>(Object.values(ErrorCode));

/**
 * The error a replay of a final failure throws: the same code, message, reason and details as the first time. A
 * failure the ledger recorded (`RESULT_INVALID`) replays as that `ToolLedgerError`, not as a `ToolFailure`.
 */
export function replayedFailure(stored: StoredError): ToolLedgerError {
  if (stored.name === 'ToolLedgerError' && stored.code !== 'TOOL_FAILED' && LEDGER_CODES.has(stored.code)) {
    return new ToolLedgerError(stored.code as ErrorCode, stored.message, { retryable: false });
  }
  return new ToolFailure(stored.message, {
    final: true,
    ...(stored.reason === undefined ? {} : { reason: stored.reason }),
    ...(stored.details === undefined ? {} : { details: stored.details }),
    replayed: true,
  });
}
