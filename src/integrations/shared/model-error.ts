import { ToolFailure, ToolLedgerError } from '../../contract/errors.js';

/**
 * The same error with a message for the model, for SDKs that send a thrown error's message to the model. Every
 * field survives (a `ToolFailure` keeps `final`, `reason`, `details` and `replayed`), and the original error,
 * with the message for developers, is the `cause`.
 */
export function withModelMessage(error: ToolLedgerError, message: string): ToolLedgerError {
  if (error instanceof ToolFailure) {
    return new ToolFailure(message, {
      final: error.final,
      reason: error.reason,
      details: error.details,
      replayed: error.replayed,
      cause: error,
    });
  }
  return new ToolLedgerError(error.code, message, {
    cause: error,
    retryable: error.retryable,
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    ...(error.conflictReason === undefined ? {} : { conflictReason: error.conflictReason }),
    ...(error.issues === undefined ? {} : { issues: error.issues }),
    ...(error.approval === undefined ? {} : { approval: error.approval }),
  });
}

/** Remembers the replay sentence of recent calls by tool call id, for SDKs that format the output later. */
export class ReplayNotes {
  readonly #notes = new Map<string, string>();
  constructor(readonly limit = 1024) {}

  set(toolCallId: string, note: string): void {
    this.#notes.set(toolCallId, note);
    if (this.#notes.size > this.limit) {
      const oldest = this.#notes.keys().next().value;
      if (oldest !== undefined) this.#notes.delete(oldest);
    }
  }

  take(toolCallId: string): string | undefined {
    const note = this.#notes.get(toolCallId);
    this.#notes.delete(toolCallId);
    return note;
  }
}
