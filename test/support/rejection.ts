import { expect } from 'vitest';
import { ToolLedgerError } from '../../src/index.js';

/** The ToolLedgerError a promise rejects with; fails the test when it resolves or rejects with anything else. */
export async function rejection(promise: Promise<unknown>): Promise<ToolLedgerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ToolLedgerError);
  return error as ToolLedgerError;
}
