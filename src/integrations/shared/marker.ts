/**
 * Set on tool callbacks that already report through a ledger's observer, so the MCP auto-instrumentation leaves
 * them alone instead of wrapping them in a second `execute_tool` span. A registry symbol, because the adapter
 * and the instrumentation may be loaded from different copies of the package.
 */
export const LEDGER_CALLBACK = Symbol.for('tool-ledger.ledger-callback');

export function markLedgerCallback<T extends object>(callback: T): T {
  Object.defineProperty(callback, LEDGER_CALLBACK, { value: true });
  return callback;
}

export function isLedgerCallback(callback: unknown): boolean {
  return (
    typeof callback === 'function' &&
    (callback as unknown as Record<symbol, unknown>)[LEDGER_CALLBACK] === true
  );
}
