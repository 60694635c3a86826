import { ToolLedgerError } from '../../../contract/errors.js';
import type { Queryable } from '../../../contract/types.js';
import { classifyDriverError, ledgerUnavailable } from '../../driver-errors.js';
import { checkoutWithin, type PgClientLike, type PgPoolLike, withinMs } from './client.js';

/** Failures of COMMIT that are a definite answer: the transaction rolled back. */
function commitRolledBack(error: unknown): boolean {
  return classifyDriverError(error).rolledBack === true;
}

function commitOutcomeUnknown(error: unknown): ToolLedgerError {
  const detail = error instanceof Error ? error.message : String(error);
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `The connection failed while committing the transaction (${detail}), so whether it committed is unknown. Retry with the same idempotency key: the retry replays the result if it committed and runs the call if it did not. Do not use a new key.`,
    { cause: error, retryable: true },
  );
}

/** Checks out a client and opens a transaction on it, once more on a fresh client if the first was stale. */
async function begin(
  pool: PgPoolLike,
  answerTimeoutMs: number,
): Promise<{ client: PgClientLike; onError: (error: Error) => void }> {
  for (let attempt = 1; ; attempt++) {
    // pg-pool removes its own error listener while a client is checked out: without this one, a connection
    // that dies mid-transaction would crash the process with an unhandled 'error' event.
    const onError = () => {};
    let client: PgClientLike;
    try {
      client = await checkoutWithin(pool, answerTimeoutMs, onError);
    } catch (error) {
      throw ledgerUnavailable(error, 'open a transaction');
    }
    try {
      await withinMs(client.query('BEGIN'), answerTimeoutMs);
      return { client, onError };
    } catch (error) {
      client.removeListener?.('error', onError);
      client.release(error instanceof Error ? error : true);
      if (attempt >= 2 || !classifyDriverError(error).retryable) {
        throw ledgerUnavailable(error, 'begin a transaction');
      }
    }
  }
}

/**
 * Runs `fn` in a transaction on a pool client: committed when it returns, rolled back when it throws. A connection
 * that dies under it is the driver's failure, not the callback's; a COMMIT whose answer is lost says so.
 */
export async function pgTransaction<T>(
  pool: PgPoolLike,
  answerTimeoutMs: number,
  fn: (tx: Queryable) => Promise<T>,
): Promise<T> {
  const { client, onError } = await begin(pool, answerTimeoutMs);
  let broken: Error | true | undefined;
  const tx: Queryable = {
    query: async (text, params) => {
      try {
        return await withinMs(client.query(text, params), answerTimeoutMs);
      } catch (error) {
        if (classifyDriverError(error).outcomeUnknown) broken = error instanceof Error ? error : true;
        throw error;
      }
    },
  };
  try {
    let result: T;
    try {
      result = await fn(tx);
    } catch (error) {
      try {
        await withinMs(client.query('ROLLBACK'), answerTimeoutMs);
      } catch (rollbackError) {
        broken = rollbackError instanceof Error ? rollbackError : true;
      }
      // The connection died under the transaction: nothing committed, and the handler's error is the
      // driver's symptom, not its own failure.
      if (broken !== undefined && !(error instanceof ToolLedgerError)) {
        throw ledgerUnavailable(broken === true ? error : broken, 'finish the transaction');
      }
      throw error;
    }
    try {
      await withinMs(client.query('COMMIT'), answerTimeoutMs);
    } catch (error) {
      broken = error instanceof Error ? error : true;
      if (commitRolledBack(error)) throw ledgerUnavailable(error, 'commit the transaction');
      throw commitOutcomeUnknown(error);
    }
    return result;
  } finally {
    client.removeListener?.('error', onError);
    client.release(broken);
  }
}
